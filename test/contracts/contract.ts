import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { simulatorCertificate } from '../../simulators/server';

/**
 * Recorded provider exchanges (contract fixtures): for each provider call, the request our client
 * sends and the answer the provider documents. Both sides are checked against the same file, so
 * the client and the simulator cannot drift away from the provider together.
 *
 * Every leaf must be equal, except those named in `variable` (timestamps, signatures, ids), whose
 * value, as a string, must match the regex given, whole (it is anchored); objects must have the
 * same keys. Paths are
 * dotted: `request.body.Timestamp`, `answer.body.Body.stkCallback.CallbackMetadata.Item.0.Value`.
 * For a callback (provider → us) `request` is what the provider sends, `answer` what we answer.
 */
export interface Exchange {
  provider: string;
  call: string;
  /** Where the documented request and answer come from. */
  source: string;
  request: { method: string; path: string; headers?: Record<string, string>; body?: unknown };
  answer: { status: number; headers?: Record<string, string>; body?: unknown };
  variable?: Record<string, string>;
}

const root = join(__dirname);

/** Every fixture of a provider (test/contracts/<provider>/*.json), by call name. */
export function loadExchanges(provider: string): Map<string, Exchange> {
  const dir = join(root, provider);
  const exchanges = new Map<string, Exchange>();
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()) {
    const exchange = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Exchange;
    exchanges.set(exchange.call, exchange);
  }
  return exchanges;
}

export function exchange(exchanges: Map<string, Exchange>, call: string): Exchange {
  const found = exchanges.get(call);
  if (!found) throw new Error(`no contract fixture for ${call}`);
  return found;
}

/**
 * Where `actual` differs from the fixture's part at `prefix` (`request` or `answer`, or deeper):
 * one line per difference, empty when it matches. Header names compare in lower case and only
 * the headers the fixture lists are checked.
 */
export function differences(fixture: Exchange, prefix: string, actual: unknown): string[] {
  const expected = prefix.split('.').reduce<unknown>((part, key) => (part as Record<string, unknown>)?.[key], fixture);
  const variable = fixture.variable ?? {};
  const found: string[] = [];
  const walk = (want: unknown, got: unknown, path: string) => {
    const pattern = variable[path];
    if (pattern !== undefined) {
      const ok =
        (typeof got === 'string' || typeof got === 'number' || typeof got === 'boolean') &&
        new RegExp(`^(?:${pattern})$`).test(String(got));
      if (!ok) found.push(`${path}: ${JSON.stringify(got)} does not match /${pattern}/`);
      return;
    }
    if (Array.isArray(want)) {
      if (!Array.isArray(got) || got.length !== want.length) {
        found.push(`${path}: expected ${want.length} items, got ${JSON.stringify(got)?.slice(0, 200)}`);
        return;
      }
      want.forEach((item, i) => walk(item, got[i], `${path}.${i}`));
      return;
    }
    if (want !== null && typeof want === 'object') {
      if (got === null || typeof got !== 'object' || Array.isArray(got)) {
        found.push(`${path}: expected an object, got ${JSON.stringify(got)?.slice(0, 200)}`);
        return;
      }
      const headers = path.endsWith('.headers');
      const gotObject = headers
        ? Object.fromEntries(Object.entries(got).map(([k, v]) => [k.toLowerCase(), v]))
        : (got as Record<string, unknown>);
      const wantKeys = Object.keys(want).map((k) => (headers ? k.toLowerCase() : k));
      for (const key of wantKeys) {
        if (!(key in gotObject)) found.push(`${path}.${key}: missing`);
        else
          walk(
            (want as Record<string, unknown>)[headers ? Object.keys(want).find((k) => k.toLowerCase() === key)! : key],
            gotObject[key],
            `${path}.${key}`,
          );
      }
      if (!headers)
        for (const key of Object.keys(gotObject))
          if (!wantKeys.includes(key) && gotObject[key] !== undefined) found.push(`${path}.${key}: not expected`);
      return;
    }
    if (want !== got)
      found.push(`${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)?.slice(0, 200)}`);
  };
  walk(expected, actual, prefix);
  return found;
}

/** A request as a fake provider received it, its body decoded (JSON, multipart form, zip). */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: unknown;
}

/**
 * A body in comparable form: JSON parsed; a multipart form as an object of its fields (a field
 * holding a JSON object parsed; files as `{file: true, type}`, repeated names as arrays); a zip
 * as `{entries: [names], "info.json": parsed}`.
 */
export async function decodeBody(headers: Record<string, string>, raw: Buffer): Promise<unknown> {
  if (raw.length === 0) return undefined;
  const type = headers['content-type'] ?? '';
  if (type.startsWith('multipart/form-data')) {
    const form = await new Request('http://decode', {
      method: 'POST',
      headers: { 'content-type': type },
      body: raw,
    }).formData();
    const fields: Record<string, unknown> = {};
    for (const [name, value] of form.entries()) {
      const decoded =
        typeof value === 'string'
          ? /^\s*\{/.test(value)
            ? (JSON.parse(value) as unknown)
            : value
          : { file: true, type: value.type };
      if (name in fields) {
        const prior = fields[name];
        fields[name] = Array.isArray(prior) ? [...(prior as unknown[]), decoded] : [prior, decoded];
      } else fields[name] = decoded;
    }
    return fields;
  }
  if (type.startsWith('application/zip')) {
    const entries = unzipSync(new Uint8Array(raw));
    return {
      entries: Object.keys(entries).sort(),
      'info.json': entries['info.json'] ? (JSON.parse(strFromU8(entries['info.json'])) as unknown) : undefined,
    };
  }
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 1, 2, 3, 4]);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
/** Stand-in bytes for an image of `type` (what a fixture's `{file: true, type}` becomes on the wire). */
export const sampleImage = (type: string) => (type === 'image/png' ? PNG : JPEG);

/**
 * A fixture's request body on the wire, the inverse of decodeBody: JSON, a multipart form (its
 * files as sample images) or a zip (info.json plus a sample image per other entry). Answers the
 * bytes and the content type to send them with.
 */
export async function encodeBody(request: Exchange['request']): Promise<{ body?: Uint8Array; contentType?: string }> {
  const type = Object.entries(request.headers ?? {}).find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
  if (request.body === undefined) return {};
  if (type.startsWith('multipart/form-data')) {
    const form = new FormData();
    for (const [name, value] of Object.entries(request.body as Record<string, unknown>)) {
      for (const part of Array.isArray(value) ? value : [value]) {
        const file = part as { file?: boolean; type?: string };
        if (file && typeof file === 'object' && file.file === true)
          form.append(
            name,
            new Blob([new Uint8Array(sampleImage(file.type ?? ''))], { type: file.type }),
            `${name}.bin`,
          );
        else form.append(name, typeof part === 'string' ? part : JSON.stringify(part));
      }
    }
    const encoded = new Response(form);
    return { body: new Uint8Array(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type')! };
  }
  if (type.startsWith('application/zip')) {
    const { entries, 'info.json': info } = request.body as { entries: string[]; 'info.json': unknown };
    const files = Object.fromEntries(
      entries.map((name) => [
        name,
        name === 'info.json'
          ? strToU8(JSON.stringify(info))
          : new Uint8Array(sampleImage(name.endsWith('.png') ? 'image/png' : 'image/jpeg')),
      ]),
    );
    return { body: zipSync(files), contentType: 'application/zip' };
  }
  return { body: new TextEncoder().encode(JSON.stringify(request.body)), contentType: type || 'application/json' };
}

async function read(req: IncomingMessage): Promise<RecordedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = Object.fromEntries(
    Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]),
  );
  return {
    method: req.method ?? '',
    path: req.url ?? '',
    headers,
    body: await decodeBody(headers, Buffer.concat(chunks)),
  };
}

export interface FakeProvider {
  url: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** The requests to one fixture's method and path (query string included when the fixture has one). */
  requestsFor(fixture: Exchange): RecordedRequest[];
  close(): Promise<void>;
}

/**
 * An HTTP server that answers each request with the answer of the fixture for its method and
 * path (the fixture's path with `{name}` segments matching any segment) and records it: what a
 * client test runs the client against. Anything else is answered 404.
 */
export async function startFakeProvider(fixtures: Exchange[], options: { tls?: boolean } = {}): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const matcher = (fixture: Exchange) => {
    const [path, query] = fixture.request.path.split('?');
    const pattern = new RegExp(
      `^${path!.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/?]+')}${query === undefined ? '(\\?.*)?' : `\\?${query.replace(/[.*+?^$()|[\]\\]/g, '\\$&')}`}$`,
    );
    return (method: string, url: string) => method === fixture.request.method && pattern.test(url);
  };
  const routes = fixtures.map((fixture) => ({ fixture, matches: matcher(fixture) }));
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    read(req).then(
      (recorded) => {
        requests.push(recorded);
        const route = routes.find((r) => r.matches(recorded.method, recorded.path));
        if (!route) {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no fixture"}');
          return;
        }
        const { status, headers, body } = route.fixture.answer;
        res
          .writeHead(status, { 'content-type': 'application/json', ...headers })
          .end(body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body));
      },
      () => res.writeHead(400).end(),
    );
  };
  // Over TLS, as `localhost` with the simulators' certificate: where a presigned storage URL may point.
  const server = options.tls ? createTlsServer(simulatorCertificate(), handler) : createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: options.tls ? `https://localhost:${port}` : `http://127.0.0.1:${port}`,
    requests,
    requestsFor: (fixture) => requests.filter((r) => matcher(fixture)(r.method, r.path)),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

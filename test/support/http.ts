import { appendFileSync } from 'node:fs';
import { request } from 'node:http';
import { contractProblems } from './contract';
import { harness } from './harness';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // Tests read arbitrary JSON answers.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface CallOptions {
  json?: unknown;
  /** A raw body, sent as given (with contentType when set). */
  raw?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  baseUrl?: string;
  /** Check the exchange against /openapi.json: always for the test API, on request for another instance of it. */
  contract?: boolean;
}

/** An answer that disagrees with our own OpenAPI document (test/support/contract.ts). */
export class ContractMismatch extends Error {
  override name = 'ContractMismatch';
}

/**
 * One real HTTP request to the test API (or another base URL). Exchanges with the test API (and
 * with another instance of it, when told `contract`) are checked against /openapi.json: an answer (or an accepted JSON body) the document disagrees
 * with throws ContractMismatch, naming the operation, the status and the JSON paths.
 */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = options.contentType ?? 'application/json';
  } else if (options.raw !== undefined) {
    body = options.raw;
    if (options.contentType) headers['content-type'] = options.contentType;
  }
  const response = await fetch(`${options.baseUrl ?? harness().baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (options.contract ?? options.baseUrl === undefined) {
    const problems = contractProblems({
      method,
      path,
      status: response.status,
      contentType: response.headers.get('content-type'),
      requestBody: options.json,
      responseBody: parsed,
      responseText: text,
    });
    if (problems.length > 0) {
      const message = `${problems.join('\n')}\nanswer: ${text.slice(0, 500)}`;
      // CONTRACT_REPORT=<file> lists every mismatch of a run instead of failing at the first.
      if (process.env.CONTRACT_REPORT) appendFileSync(process.env.CONTRACT_REPORT, `${message}\n\n`);
      else throw new ContractMismatch(message);
    }
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/**
 * A deprecated operation's or channel's answer (errors included): RFC 9745 `Deprecation` as
 * `@<epoch seconds>` of DEPRECATED_SINCE, RFC 8594 `Sunset` (DEPRECATION_SUNSET), and `Link`s
 * to the reference (`rel="deprecation"`) and, when there is one, the successor.
 */
export function assertDeprecated(reply: Reply, successor?: string) {
  const { config } = harness();
  const problems: string[] = [];
  if (reply.headers.get('deprecation') !== `@${Math.floor(config.DEPRECATED_SINCE.getTime() / 1000)}`)
    problems.push(`Deprecation: ${reply.headers.get('deprecation')}`);
  if (reply.headers.get('sunset') !== config.DEPRECATION_SUNSET.toUTCString())
    problems.push(`Sunset: ${reply.headers.get('sunset')}`);
  const link = reply.headers.get('link') ?? '';
  if (!/rel="deprecation"/.test(link)) problems.push(`Link without rel="deprecation": ${link}`);
  if (successor && !link.includes(`<${successor}>; rel="successor-version"`))
    problems.push(`Link without the successor ${successor}: ${link}`);
  if (problems.length > 0) throw new Error(`not announced as deprecated (${reply.status}): ${problems.join('; ')}`);
}

/** Sends exactly these path and body bytes to the test API (fetch would normalise them); not contract-checked. */
export function rawCall(
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const url = new URL(harness().baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          resolve({
            status: res.statusCode!,
            headers: new Headers(res.headers as Record<string, string>),
            text,
            body: parsed,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

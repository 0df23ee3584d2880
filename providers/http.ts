import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';

/**
 * HTTP for provider calls: a deadline over the whole exchange whose timer is cleared as soon as
 * the answer is in. (AbortSignal.timeout keeps each request's signal, and what listens to it,
 * alive until the timer fires: at hundreds of provider calls a second that held hundreds of
 * megabytes in the worker.) Answers come back fully read, as an HttpAnswer: a Response built
 * around a buffer costs web streams and copies on every read, measurable at sweep rates.
 */

/** A fully read answer. */
export interface HttpAnswer {
  status: number;
  ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

function answer(status: number, body: Buffer | null): HttpAnswer {
  const text = () => (body ? body.toString('utf8') : '');
  return {
    status,
    ok: status >= 200 && status < 300,
    text: async () => text(),
    json: async () => JSON.parse(text()) as unknown,
  };
}

/**
 * Keep-alive sockets, bounded per provider so a burst queues instead of opening hundreds. An idle
 * socket is closed after four seconds, or a second before the keep-alive timeout its server
 * announced when that is sooner (Node heeds the announcement only in an agent with a timeout of
 * its own). A request written on a socket the server is closing fails with ECONNRESET, and a push
 * prompt that fails so must be taken as possibly sent: never resent, settled only by its callback.
 */
const KEEP_ALIVE = { keepAlive: true, maxSockets: 64, timeout: 4_000 };
const agents = {
  'http:': new http.Agent(KEEP_ALIVE),
  'https:': new https.Agent(KEEP_ALIVE),
};

export class HttpTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Keep-alive HTTPS that also trusts `ca` (PEM): a provider whose certificate no public CA signed
 * (our simulators in development). Without `ca`, the shared agent and the system's CAs.
 */
export function httpsAgentTrusting(ca: string | undefined): https.Agent {
  return ca ? new https.Agent({ ...KEEP_ALIVE, ca: [...tls.rootCertificates, ca] }) : agents['https:'];
}

/**
 * A request through node:http, which costs a fraction of fetch's CPU on the hot provider paths
 * (status lookups, pushes). Network failures reject with the socket's error (its `code`, e.g.
 * ECONNREFUSED, tells whether anything was sent). `httpsAgent` replaces the shared one for
 * https URLs.
 */
export function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array; httpsAgent?: https.Agent },
  timeoutMs: number,
): Promise<HttpAnswer> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const transport = secure ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      target,
      {
        method: init.method ?? 'GET',
        headers: init.headers,
        agent: secure ? (init.httpsAgent ?? agents['https:']) : agents['http:'],
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve(answer(res.statusCode ?? 500, chunks.length > 0 ? Buffer.concat(chunks) : null));
        });
        res.on('error', fail);
      },
    );
    const timer = setTimeout(() => req.destroy(new HttpTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    function fail(error: Error) {
      clearTimeout(timer);
      reject(error);
    }
    req.on('error', fail);
    req.end(init.body);
  });
}

/** fetch (for multipart and binary bodies) with the same whole-exchange deadline. */
export async function fetchWithDeadline(
  url: string,
  init: RequestInit,
  timeoutMs: number,
  fetchImpl: typeof fetch = fetch,
): Promise<HttpAnswer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new HttpTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const response = await fetchImpl(url, { ...init, signal: controller.signal });
    return answer(response.status, Buffer.from(await response.arrayBuffer()));
  } finally {
    clearTimeout(timer);
  }
}

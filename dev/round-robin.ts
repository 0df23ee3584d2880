import http from 'node:http';
import { once } from 'node:events';

/**
 * The load balancer of `npm run cluster`, as small as one can be: each request goes to the next
 * API instance in turn, with X-Forwarded-For appended (the instances run TRUST_PROXY). A request
 * an instance refused to connect (it is down or restarting) goes to the next one: nothing reached
 * the refusing one, so trying another cannot do anything twice. One whose instance died before
 * answering (the connection reset) goes to the next only when repeating it is safe: a GET or HEAD,
 * or a request under an Idempotency-Key, which the API executes once whichever instance it
 * reaches (api/middleware/idempotency.ts); any other is answered 502, as a load balancer does.
 * Bodies are read first for that.
 */
export async function startRoundRobin(targets: () => string[], host: string, port: number) {
  let next = 0;
  const server = http.createServer(async (req, res) => {
    const body: Buffer[] = [];
    for await (const chunk of req) body.push(chunk as Buffer);
    const headers = {
      ...req.headers,
      'x-forwarded-for': [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', '),
    };
    const upstreams = targets();
    let failure = 'none to try';
    // Each instance once, from this request's turn on (others' turns must not send it back to one that failed).
    const turn = next++;
    for (let tried = 0; tried < upstreams.length; tried++) {
      const target = new URL(upstreams[(turn + tried) % upstreams.length]!);
      try {
        const answer = await send(target, req.method!, req.url!, headers, Buffer.concat(body));
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
        return;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        failure = code ?? String(error);
        if (code !== 'ECONNREFUSED' && !(CUT.has(code ?? '') && repeatable(req))) break;
      }
    }
    res.writeHead(502, { 'content-type': 'text/plain' }).end(`no API instance answered (${failure})`);
  });
  server.listen(port, host);
  await once(server, 'listening');
  return {
    url: `http://${host}:${(server.address() as { port: number }).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A connection per request: a pooled one an instance closed meanwhile (its keep-alive timeout, or
 * its death) would reset a request that never reached it, and a POST without a key must then be 502.
 */
const FRESH_CONNECTIONS = new http.Agent({ keepAlive: false });

/** How a connection ends when its instance dies after the request was sent (or while it was being sent). */
const CUT = new Set(['ECONNRESET', 'EPIPE']);
const repeatable = (req: http.IncomingMessage) =>
  req.method === 'GET' || req.method === 'HEAD' || req.headers['idempotency-key'] !== undefined;

function send(target: URL, method: string, path: string, headers: http.OutgoingHttpHeaders, body: Buffer) {
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = http.request(
      { host: target.hostname, port: target.port, method, path, headers, agent: FRESH_CONNECTIONS },
      resolve,
    );
    request.once('error', reject);
    request.end(body);
  });
}

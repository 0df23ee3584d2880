import http from 'node:http';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';

/**
 * The load balancer of `npm run cluster`, as small as one can be: each request goes to the next
 * API instance in turn, with X-Forwarded-For appended (the instances run TRUST_PROXY). A request
 * an instance refused to connect (it is down or restarting) goes to the next one: nothing reached
 * the refusing one, so trying another cannot do anything twice. One whose instance died before
 * answering (the connection reset) goes to the next only when it is a GET or HEAD; any other is
 * answered 502, as a load balancer does (nginx does not resend a POST either): the API may have
 * executed it, and only the client can tell, by sending it again under its Idempotency-Key.
 * Bodies are read first for that.
 */
export async function startRoundRobin(targets: () => string[], host: string, port: number) {
  let next = 0;
  const server = http.createServer(async (req, res) => {
    const body: Buffer[] = [];
    try {
      for await (const chunk of req) body.push(chunk as Buffer);
    } catch {
      return; // the client went away mid-upload: nobody to answer
    }
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
      let answer: http.IncomingMessage;
      try {
        answer = await send(target, req.method!, req.url!, headers, Buffer.concat(body));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        failure = code ?? String(error);
        if (code !== 'ECONNREFUSED' && !(CUT.has(code ?? '') && SAFE.has(req.method!))) break;
        continue;
      }
      res.writeHead(answer.statusCode!, answer.headers);
      // An instance dying mid-answer ends the client's response abruptly rather than leaving it open.
      await pipeline(answer, res).catch(() => res.destroy());
      return;
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
 * its death) would reset a request that never reached it, and a POST must then be 502.
 */
const FRESH_CONNECTIONS = new http.Agent({ keepAlive: false });

/** How a connection ends when its instance dies after the request was sent (or while it was being sent). */
const CUT = new Set(['ECONNRESET', 'EPIPE']);
/** Methods that change nothing: sending one again after a cut cannot do anything twice. */
const SAFE = new Set(['GET', 'HEAD']);

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

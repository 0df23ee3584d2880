import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebhookClient } from '../../providers/webhooks/client';

/** A receiver that answers every request with `handle`. */
async function receiver(handle: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server };
}

describe('webhook client: every delivery settles by its deadline, whatever the receiver does', () => {
  const client = createWebhookClient({ allowed: 'loopback', timeoutMs: 500, userAgent: 'test' });
  const message = (url: string) => ({ url, id: 'evt', timestampSeconds: 1, body: '{}', secrets: ['whsec_AAAA'] });
  const servers: Server[] = [];
  after(() => servers.forEach((s) => (s.closeAllConnections(), s.close())));
  const start = async (handle: Parameters<typeof createServer>[1]) => {
    const made = await receiver(handle);
    servers.push(made.server);
    return made.url;
  };

  it('a 101 Switching Protocols answer settles at once, as no answer', async () => {
    const url = await start(() => {});
    servers.at(-1)!.on('request', (_req, res) => {
      res.socket!.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    });
    const outcome = await client.deliver(message(url));
    assert.equal(outcome.kind, 'unanswered');
  });

  it('a 2xx with an endless body is a 2xx, decided on its status line', async () => {
    const url = await start((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'.repeat(100)), 5);
      res.on('close', () => clearInterval(timer));
    });
    const outcome = await client.deliver(message(url));
    assert.equal(outcome.kind, 'answered');
    assert.equal(outcome.kind === 'answered' && outcome.status, 200);
    assert.ok(outcome.kind === 'answered' && outcome.body.length <= 1024);
  });

  it('a status line that never comes is a timeout; a closed port a connection failure', async () => {
    const url = await start(() => {});
    const outcome = await client.deliver(message(url));
    assert.deepEqual([outcome.kind, outcome.kind === 'unanswered' && outcome.error], ['unanswered', 'timeout']);
    const refused = await client.deliver(message('http://127.0.0.1:9/hook'));
    assert.deepEqual([refused.kind, refused.kind === 'unanswered' && refused.error], ['unanswered', 'connection']);
  });

  it('a 429 brings its Retry-After; the signature headers are sent', async () => {
    let seen: Record<string, unknown> = {};
    const url = await start((req, res) => {
      seen = req.headers;
      res.writeHead(429, { 'retry-after': '7' }).end('slow down');
    });
    const outcome = await client.deliver(message(url));
    assert.deepEqual(outcome.kind === 'answered' && [outcome.status, outcome.retryAfter, outcome.body], [
      429,
      '7',
      'slow down',
    ]);
    assert.equal(seen['webhook-id'], 'evt');
    assert.match(String(seen['webhook-signature']), /^v1,/);
  });

  it('an address the setting refuses is never connected to', async () => {
    const strict = createWebhookClient({ allowed: 'public', timeoutMs: 500, userAgent: 'test' });
    const outcome = await strict.deliver(message('http://127.0.0.1:9/hook'));
    assert.deepEqual([outcome.kind, outcome.kind === 'unanswered' && outcome.error], ['unanswered', 'address']);
    const named = await strict.deliver(message('http://localhost:9/hook'));
    assert.deepEqual([named.kind, named.kind === 'unanswered' && named.error], ['unanswered', 'address']);
  });
});

import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from '../../providers/http';

describe('provider HTTP: keep-alive sockets', () => {
  let server: Server;
  let url: string;
  let connections = 0;

  before(async () => {
    // `/slow` answers after the agent's idle timeout (four seconds).
    server = createServer((req, res) => (req.url === '/slow' ? setTimeout(() => res.end('{}'), 4_500) : res.end('{}')));
    server.keepAliveTimeout = 3_000; // announced as `Keep-Alive: timeout=3`
    server.on('connection', () => (connections += 1));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('an idle socket is closed a second before the keep-alive timeout its server announced, never reused as the server closes it', async function () {
    this.timeout(10_000);
    const before = connections;
    assert.equal((await request(url, {}, 5_000)).status, 200);
    // At once: the same socket again.
    assert.equal((await request(url, {}, 5_000)).status, 200);
    assert.equal(connections - before, 1);
    // 2.5 s idle: past the agent's 2 s (3 s announced, less a second), before the server's 3 s.
    await sleep(2_500);
    assert.equal((await request(url, {}, 5_000)).status, 200);
    assert.equal(connections - before, 2, 'a new connection: the idle one was closed by us first');
  });

  it('a socket in use is never closed by the idle timeout: an answer slower than it still arrives', async function () {
    this.timeout(10_000);
    assert.equal((await request(`${url}slow`, { method: 'POST', body: '{}' }, 8_000)).status, 200);
  });
});

import { strict as assert } from 'node:assert';
import http from 'node:http';
import { once } from 'node:events';
import { changedSettings } from '../../dev/cluster';
import { loadDevConfig } from '../../dev/config';
import { startRoundRobin } from '../../dev/round-robin';
import { freePort } from '../support/ports';

/** A stand-in API instance answering its name, the path and what it was sent. */
async function instance(name: string) {
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ name, path: req.url, body, forwardedFor: req.headers['x-forwarded-for'] ?? null }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('unit: npm run cluster (the proxy in front of several API instances, the settings they get)', () => {
  it('the proxy sends each request to the next instance in turn, with its body and X-Forwarded-For', async () => {
    const [a, b] = [await instance('a'), await instance('b')];
    const proxy = await startRoundRobin(() => [a.url, b.url], '127.0.0.1', 0);
    try {
      const answers = [];
      for (let i = 0; i < 4; i++) {
        const reply = await fetch(`${proxy.url}/v1/x?i=${i}`, { method: 'POST', body: `body ${i}` });
        answers.push((await reply.json()) as { name: string; path: string; body: string; forwardedFor: string });
      }
      assert.deepEqual(
        answers.map((answer) => answer.name),
        ['a', 'b', 'a', 'b'],
      );
      assert.deepEqual(answers[3], { name: 'b', path: '/v1/x?i=3', body: 'body 3', forwardedFor: '127.0.0.1' });
    } finally {
      await Promise.all([proxy.close(), a.close(), b.close()]);
    }
  });

  it('an instance that refuses the connection (down, restarting) is passed over; none answering is 502', async () => {
    const a = await instance('a');
    const down = `http://127.0.0.1:${await freePort()}`;
    const proxy = await startRoundRobin(() => [down, a.url], '127.0.0.1', 0);
    try {
      for (let i = 0; i < 3; i++) {
        const reply = await fetch(`${proxy.url}/healthz`, { method: 'POST', body: 'once' });
        assert.equal(reply.status, 200);
        assert.deepEqual(await reply.json(), { name: 'a', path: '/healthz', body: 'once', forwardedFor: '127.0.0.1' });
      }
      // Many at once: each tries every instance once, whatever turns the others take meanwhile.
      const together = await Promise.all(
        Array.from({ length: 20 }, () => fetch(`${proxy.url}/healthz`, { method: 'POST', body: 'once' })),
      );
      assert.deepEqual(
        together.map((reply) => reply.status),
        Array.from({ length: 20 }, () => 200),
      );
    } finally {
      await a.close();
    }
    try {
      assert.equal((await fetch(`${proxy.url}/healthz`)).status, 502);
    } finally {
      await proxy.close();
    }
  });

  it('a request cut by a dying instance goes to the next only when it is a GET: a POST is 502, even under a key', async () => {
    // An instance that dies mid-request: it reads the request, then drops the connection.
    const dying = http.createServer((req, res) => {
      req.resume();
      req.once('end', () => res.socket?.destroy());
    });
    dying.listen(0, '127.0.0.1');
    await once(dying, 'listening');
    const a = await instance('a');
    const proxy = await startRoundRobin(
      () => [`http://127.0.0.1:${(dying.address() as { port: number }).port}`, a.url],
      '127.0.0.1',
      0,
    );
    try {
      const read = await fetch(`${proxy.url}/v1/x`);
      assert.equal(((await read.json()) as { name: string }).name, 'a');
      // The dying instance may have executed it: only the client, sending it again under its
      // key, can make it happen once.
      for (const headers of [{}, { 'idempotency-key': 'k1' }] as Record<string, string>[]) {
        // A read first, which the live instance answers: the POST's turn is then the dying one's.
        await (await fetch(`${proxy.url}/v1/x`)).arrayBuffer();
        const cut = await fetch(`${proxy.url}/v1/push`, { method: 'POST', headers, body: 'once' });
        assert.equal(cut.status, 502);
        assert.match(await cut.text(), /ECONNRESET|EPIPE/);
      }
    } finally {
      await Promise.all([proxy.close(), a.close(), new Promise((resolve) => dying.close(resolve))]);
    }
  });

  it('the instances get the settings the simulators changed, as environment strings', () => {
    const before = loadDevConfig({});
    const after = {
      ...before,
      KYC_PROVIDER_URL: 'http://127.0.0.1:1',
      KYC_UPLOAD_HOSTS: ['localhost', 'a'],
      FINANCING_ISSUERS: [
        { issuer: 'https://idp', jwks_url: 'https://idp/jwks', resource_access: 'database' as const },
      ],
      OBJECT_STORE_FORCE_PATH_STYLE: true,
    };
    assert.deepEqual(changedSettings(before, after), {
      KYC_PROVIDER_URL: 'http://127.0.0.1:1',
      KYC_UPLOAD_HOSTS: 'localhost,a',
      FINANCING_ISSUERS: '[{"issuer":"https://idp","jwks_url":"https://idp/jwks","resource_access":"database"}]',
      OBJECT_STORE_FORCE_PATH_STYLE: 'true',
    });
  });
});

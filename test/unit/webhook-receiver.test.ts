import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { type RunningWebhookReceiver, startWebhookReceiver } from '../../simulators/webhook-receiver';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

describe('unit: webhook receiver simulator (Standard Webhooks, verified by the reference package)', () => {
  let receiver: RunningWebhookReceiver;
  const secret = newSecret();

  const control = (path: string, method = 'GET', body?: unknown) =>
    fetch(`${receiver.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** Signs `payload` with `signingSecret` at `at` (the reference package's sign) and posts it. */
  async function deliver(
    name: string,
    payload: unknown,
    options: { signingSecret?: string; at?: Date; tamper?: (body: string) => string; signal?: AbortSignal } = {},
  ) {
    const id = `msg_${randomUUID()}`;
    const at = options.at ?? new Date();
    const body = JSON.stringify(payload);
    const signature = new Webhook(options.signingSecret ?? secret).sign(id, at, body);
    const response = await fetch(`${receiver.url}/webhooks/${name}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: options.tamper ? options.tamper(body) : body,
      signal: options.signal,
    });
    return { id, response };
  }

  before(async () => {
    receiver = await startWebhookReceiver();
  });
  beforeEach(async () => {
    assert.equal((await control('/reset', 'POST')).status, 204);
    const registered = await control('/receivers/app', 'PUT', { secret });
    assert.equal(registered.status, 204);
  });
  after(() => receiver.close());

  it('answers 204 to a delivery signed with the registered secret and records it verified', async () => {
    const payload = { type: 'loan.disbursed', timestamp: new Date().toISOString(), data: { loanId: 'loan_1' } };
    const { id, response } = await deliver('app', payload);
    assert.equal(response.status, 204);
    const [delivery, ...rest] = receiver.deliveries();
    assert.equal(rest.length, 0);
    assert.equal(delivery?.name, 'app');
    assert.equal(delivery?.webhookId, id);
    assert.equal(delivery?.type, 'loan.disbursed');
    assert.deepEqual(delivery?.body, payload);
    assert.equal(delivery?.verified, true);
    assert.equal(delivery?.answeredStatus, 204);
    assert.ok(Math.abs(delivery.timestamp! - Date.now() / 1000) < 5);
    const listed = (await (
      await control(`/deliveries?webhookId=${id}&type=loan.disbursed&name=app`)
    ).json()) as unknown[];
    assert.equal(listed.length, 1);
    assert.equal(((await (await control('/deliveries?type=other')).json()) as unknown[]).length, 0);
  });

  it('refuses a tampered body (400 signature) and records it unverified', async () => {
    const { response } = await deliver(
      'app',
      { type: 'loan.disbursed', amount: 100 },
      {
        tamper: (body) => body.replace('100', '1000'),
      },
    );
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), { error: 'signature' });
    const [delivery] = receiver.deliveries();
    assert.equal(delivery?.verified, false);
    assert.equal(delivery?.answeredStatus, 400);
    assert.deepEqual(delivery?.body, { type: 'loan.disbursed', amount: 1000 });
  });

  it('refuses a stale timestamp, a wrong secret, missing headers, and an unknown receiver', async () => {
    const stale = await deliver('app', { type: 'x' }, { at: new Date(Date.now() - 10 * 60_000) });
    assert.equal(stale.response.status, 400);
    const wrong = await deliver('app', { type: 'x' }, { signingSecret: newSecret() });
    assert.equal(wrong.response.status, 400);
    const bare = await fetch(`${receiver.url}/webhooks/app`, { method: 'POST', body: '{"type":"x"}' });
    assert.equal(bare.status, 400);
    assert.deepEqual(
      receiver.deliveries().map((d) => d.verified),
      [false, false, false],
    );
    const unknown = await deliver('nobody', { type: 'x' });
    assert.equal(unknown.response.status, 404);
    assert.equal(receiver.deliveries().length, 3);
  });

  it('accepts either secret during a rotation, and the control API refuses a malformed secret', async () => {
    const next = newSecret();
    assert.equal((await control('/receivers/app', 'PUT', { secrets: [secret, next] })).status, 204);
    assert.equal((await deliver('app', { type: 'a' })).response.status, 204);
    assert.equal((await deliver('app', { type: 'b' }, { signingSecret: next })).response.status, 204);
    assert.equal((await deliver('app', { type: 'c' }, { signingSecret: newSecret() })).response.status, 400);
    receiver.register('app', [next]);
    assert.equal((await deliver('app', { type: 'd' })).response.status, 400);
    assert.equal((await deliver('app', { type: 'e' }, { signingSecret: next })).response.status, 204);
    assert.equal((await control('/receivers/app', 'PUT', { secret: 'whsec_not*base64' })).status, 400);
    assert.equal((await control('/receivers/app', 'PUT', { secret: 'c2VjcmV0' })).status, 400);
    assert.equal((await control('/receivers/app', 'PUT', { secrets: [] })).status, 400);
    assert.throws(() => receiver.register('app', ['nope']));
  });

  it('answers 429 with Retry-After while rateLimited, for `times` deliveries, then normal again', async () => {
    const patched = await control('/mode', 'PATCH', { answer: 'rateLimited', retryAfterSeconds: 7, times: 1 });
    assert.equal(patched.status, 200);
    const limited = await deliver('app', { type: 'a' });
    assert.equal(limited.response.status, 429);
    assert.equal(limited.response.headers.get('retry-after'), '7');
    const normal = await deliver('app', { type: 'b' });
    assert.equal(normal.response.status, 204);
    assert.deepEqual(
      receiver.deliveries().map((d) => [d.verified, d.answeredStatus]),
      [
        [true, 429],
        [true, 204],
      ],
    );
    assert.equal(((await (await control('/mode')).json()) as { answer: string }).answer, 'normal');
    // No count: until changed; a bad signature is still refused first.
    await control('/mode', 'PATCH', { answer: 'gone' });
    assert.equal((await deliver('app', { type: 'c' })).response.status, 410);
    assert.equal((await deliver('app', { type: 'd' })).response.status, 410);
    assert.equal((await deliver('app', { type: 'e' }, { signingSecret: newSecret() })).response.status, 400);
    await control('/mode', 'PATCH', { answer: 'error' });
    assert.equal((await deliver('app', { type: 'f' })).response.status, 500);
    assert.equal((await control('/mode', 'PATCH', { answer: 'sideways' })).status, 400);
  });

  it('holds the answer in slow mode, and frees it when the sender gives up', async () => {
    await control('/mode', 'PATCH', { answer: 'slow', slowMs: 300 });
    const started = Date.now();
    assert.equal((await deliver('app', { type: 'a' })).response.status, 204);
    assert.ok(Date.now() - started >= 290, `answered after ${Date.now() - started} ms`);
    await control('/mode', 'PATCH', { slowMs: 60_000 });
    await assert.rejects(deliver('app', { type: 'b' }, { signal: AbortSignal.timeout(100) }), { name: 'TimeoutError' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(
      receiver.deliveries().map((d) => [d.type, d.verified, d.answeredStatus]),
      [
        ['a', true, 204],
        ['b', true, null],
      ],
    );
    // A reset releases a held answer rather than leave the sender waiting on a forgotten mode.
    const pending = deliver('app', { type: 'c' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await control('/reset', 'POST');
    assert.equal((await pending).response.status, 204);
  });

  it('refuses a body over 1 MB (413)', async () => {
    const { response } = await deliver('app', { type: 'big', data: 'x'.repeat(1024 * 1024) });
    assert.equal(response.status, 413);
    assert.equal(receiver.deliveries().length, 0);
  });
});

import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSmsClient } from '../../providers/sms/client';
import { SmsError } from '../../providers/sms/protocol';
import { type RunningSmsSimulator, startSmsSimulator } from '../../simulators/sms';

const CREDENTIALS = { username: 'lending-dev', apiKey: 'dev-sms-api-key-not-a-secret' };
const NUMBER = '+254712000123';

/** A stand-in for our delivery-report route: records the form-encoded reports it receives. */
async function formReceiver() {
  const received: Record<string, string>[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      assert.equal(req.headers['content-type'], 'application/x-www-form-urlencoded');
      received.push(Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString())));
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sms/delivery-reports`,
    received,
    close: () => server.close(),
  };
}

const refusal = async (promise: Promise<unknown>): Promise<SmsError> => {
  const error = await promise.then(
    () => assert.fail('expected an SmsError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof SmsError, String(error));
  return error;
};

describe('unit: SMS gateway client (Africa’s Talking messaging API) against its simulator over HTTP', () => {
  let simulator: RunningSmsSimulator;
  const control = (path: string, method = 'GET', body?: unknown) =>
    fetch(`${simulator.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const client = (overrides: Partial<Parameters<typeof createSmsClient>[0]> = {}) =>
    createSmsClient({ baseUrl: simulator.url, ...CREDENTIALS, senderId: 'LENDER', ...overrides });

  before(async () => {
    simulator = await startSmsSimulator({ ...CREDENTIALS, senderIds: ['LENDER', '20880'] });
  });
  afterEach(async () => {
    assert.equal((await control('/reset', 'POST')).status, 204);
  });
  after(() => simulator.close());

  it('sends one text: 201 with the recipient accepted (101 Success), its messageId, and the text readable through the control API', async () => {
    const sent = await client().send({ to: NUMBER, message: 'Your code is 123456' });
    assert.match(sent.messageId, /^ATXid_[0-9a-f]{32}$/);
    assert.equal(sent.statusCode, 101);
    assert.equal(sent.status, 'Success');
    const messages = (await (await control(`/messages?to=${encodeURIComponent(NUMBER)}`)).json()) as {
      message: string;
      from: string;
      messageId: string;
    }[];
    assert.deepEqual(
      messages.map((m) => [m.message, m.from, m.messageId]),
      [['Your code is 123456', 'LENDER', sent.messageId]],
    );
  });

  it('a wrong apiKey or username is 401, a refusal that is neither indeterminate nor worth a retry', async () => {
    for (const wrong of [{ apiKey: 'another-key' }, { username: 'another-app' }]) {
      const error = await refusal(client(wrong).send({ to: NUMBER, message: 'x' }));
      assert.equal(error.details.httpStatus, 401);
      assert.equal(error.details.indeterminate, false);
      assert.equal(error.details.transient, false);
      assert.doesNotMatch(error.message, /dev-sms-api-key|another-key/, 'no key in the message');
    }
    assert.deepEqual(simulator.sent(), []);
  });

  it('a number not in international format is refused per recipient (403 InvalidPhoneNumber), an unknown sender id (402)', async () => {
    const invalid = await refusal(client().send({ to: '0712000123', message: 'x' }));
    assert.equal(invalid.details.statusCode, 403);
    assert.equal(invalid.details.transient, false);
    const sender = await refusal(client({ senderId: 'NOT-OURS' }).send({ to: NUMBER, message: 'x' }));
    assert.equal(sender.details.statusCode, 402);
    assert.deepEqual(simulator.sent(), []);
  });

  it('the gateway failing: HTTP 500 is transient and indeterminate; 501 GatewayError transient; 405 InsufficientBalance not', async () => {
    await control('/mode', 'PATCH', { send: 'error' });
    const error = await refusal(client().send({ to: NUMBER, message: 'x' }));
    assert.deepEqual(
      [error.details.httpStatus, error.details.transient, error.details.indeterminate],
      [500, true, true],
    );
    await control('/mode', 'PATCH', { send: 'gateway' });
    const gateway = await refusal(client().send({ to: NUMBER, message: 'x' }));
    assert.deepEqual([gateway.details.statusCode, gateway.details.transient], [501, true]);
    await control('/mode', 'PATCH', { send: 'balance' });
    const balance = await refusal(client().send({ to: NUMBER, message: 'x' }));
    assert.deepEqual([balance.details.statusCode, balance.details.transient], [405, false]);
  });

  it('no answer in time is indeterminate (the text may have gone out); an unreachable gateway certainly sent nothing', async () => {
    await control('/mode', 'PATCH', { send: 'timeout' });
    const late = await refusal(client({ timeoutMs: 200 }).send({ to: NUMBER, message: 'x' }));
    assert.equal(late.details.indeterminate, true);
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    const unreachable = await refusal(
      client({ baseUrl: `http://127.0.0.1:${port}` }).send({ to: NUMBER, message: 'x' }),
    );
    assert.equal(unreachable.details.indeterminate, false);
  });

  it('delivery reports are POSTed form-encoded to the callback URL: id (the messageId), status, phoneNumber, networkCode, failureReason when failed', async () => {
    const receiver = await formReceiver();
    try {
      await control('/mode', 'PATCH', { deliveryReportUrl: receiver.url, deliveryDelayMs: 0 });
      const delivered = await client().send({ to: NUMBER, message: 'one' });
      await control('/mode', 'PATCH', { delivery: 'Failed' });
      const failed = await client().send({ to: NUMBER, message: 'two' });
      const deadline = Date.now() + 5_000;
      while (receiver.received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const byId = new Map(receiver.received.map((r) => [r.id, r]));
      assert.deepEqual(byId.get(delivered.messageId), {
        id: delivered.messageId,
        status: 'Success',
        phoneNumber: NUMBER,
        networkCode: '63902',
      });
      assert.deepEqual(byId.get(failed.messageId), {
        id: failed.messageId,
        status: 'Failed',
        phoneNumber: NUMBER,
        networkCode: '63902',
        failureReason: 'DeliveryFailure',
      });
    } finally {
      receiver.close();
    }
  });

  it('the simulator refuses what the gateway refuses: a JSON body, a missing field (400), an Accept other than JSON (406)', async () => {
    const post = (body: string, headers: Record<string, string>) =>
      fetch(`${simulator.url}/version1/messaging`, {
        method: 'POST',
        headers: { apiKey: CREDENTIALS.apiKey, ...headers },
        body,
      });
    const form = (fields: Record<string, string>) =>
      new URLSearchParams({ username: CREDENTIALS.username, ...fields }).toString();
    const json = await post(JSON.stringify({ username: CREDENTIALS.username, to: NUMBER, message: 'x' }), {
      'content-type': 'application/json',
      accept: 'application/json',
    });
    assert.equal(json.status, 400);
    const missing = await post(form({ to: NUMBER }), {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    });
    assert.equal(missing.status, 400);
    assert.match(await missing.text(), /message/);
    const xml = await post(form({ to: NUMBER, message: 'x' }), {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/xml',
    });
    assert.equal(xml.status, 406);
    assert.deepEqual(simulator.sent(), []);
  });
});

import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEmailClient } from '../../providers/email/client';
import { type EmailEvent, EmailError, messageIdOf } from '../../providers/email/protocol';
import { type RunningEmailSimulator, type SentEmail, startEmailSimulator } from '../../simulators/email';

const API_KEY = 'SG.dev-email-api-key.not-a-secret';
const FROM = { email: 'no-reply@lender.example', name: 'Lender' };
const TO = 'amina@customer.example';
const LINK = 'https://app.lender.example/current-account/confirm?token=single-use-0f3a9c';
const MESSAGE = {
  to: TO,
  subject: 'Confirm your e-mail address',
  text: `Open ${LINK} to confirm.`,
  html: `<p>Open <a href="${LINK}">this link</a> to confirm.</p>`,
};

/** A plain HTTP server answering every request with `answer` (for answers the simulator never gives). */
async function stub(answer: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, Buffer.concat(chunks).toString(), res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const refusal = async (promise: Promise<unknown>): Promise<EmailError> => {
  const error = await promise.then(
    () => assert.fail('expected an EmailError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof EmailError, String(error));
  return error;
};

/** Nothing secret in an error: not the key, not the message (its link is single-use). */
const assertNothingSecret = (error: EmailError) => {
  for (const secret of [API_KEY, LINK, MESSAGE.text, MESSAGE.html, 'single-use-0f3a9c'])
    assert.ok(!error.message.includes(secret), `the error message carries a secret: ${error.message}`);
};

describe('unit: e-mail provider client (SendGrid v3 Mail Send) against its simulator over HTTP', () => {
  let simulator: RunningEmailSimulator;
  const control = (path: string, method = 'GET', body?: unknown) =>
    fetch(`${simulator.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const client = (overrides: Partial<Parameters<typeof createEmailClient>[0]> = {}) =>
    createEmailClient({ baseUrl: simulator.url, apiKey: API_KEY, from: FROM, ...overrides });
  /** A raw Mail Send request, for what our client never sends. */
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${simulator.url}/v3/mail/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
      body,
    });
  const valid = () => ({
    personalizations: [{ to: [{ email: TO }] }],
    from: { email: FROM.email },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: 'Hello' }],
  });
  const errorsOf = async (response: Response) =>
    ((await response.json()) as { errors: { message: string; field: string | null; help: null }[] }).errors;

  before(async () => {
    simulator = await startEmailSimulator({ apiKey: API_KEY, verifiedSenders: [FROM.email, '@mail.lender.example'] });
  });
  afterEach(async () => {
    assert.equal((await control('/reset', 'POST')).status, 204);
  });
  after(() => simulator.close());

  it('an accepted send is 202 with an empty body and an X-Message-Id, the message readable through the control API', async () => {
    const sent = await client().send(MESSAGE);
    assert.match(sent.messageId, /^[A-Za-z0-9_-]{22}$/);
    const messages = (await (await control(`/messages?to=${encodeURIComponent(TO)}`)).json()) as SentEmail[];
    assert.equal(messages.length, 1);
    const message = messages[0]!;
    assert.deepEqual(
      [message.messageId, message.to, message.from, message.fromName, message.subject, message.text, message.html],
      [sent.messageId, TO, FROM.email, FROM.name, MESSAGE.subject, MESSAGE.text, MESSAGE.html],
    );
    assert.ok(message.text!.includes(LINK), 'a test reads the link that was e-mailed');
    assert.ok(!Number.isNaN(Date.parse(message.sentAt)));

    const raw = await post(JSON.stringify(valid()));
    assert.equal(raw.status, 202);
    assert.equal(await raw.text(), '');
    assert.match(raw.headers.get('x-message-id') ?? '', /^[A-Za-z0-9_-]{22}$/);
    assert.deepEqual(
      ((await (await control('/messages?to=someone@else.example')).json()) as unknown[]).length,
      0,
      'the control API filters by recipient',
    );
  });

  it('a text-only send carries one text/plain block; an address on an authenticated domain is a verified sender', async () => {
    await client({ from: { email: 'alerts@mail.lender.example' } }).send({
      to: TO,
      subject: 'Plain',
      text: 'Just text',
    });
    const message = simulator.sent()[0]!;
    assert.deepEqual(
      [message.from, message.text, message.html],
      ['alerts@mail.lender.example', 'Just text', undefined],
    );
  });

  it('a wrong or missing API key is 401, a refusal neither indeterminate nor transient, and the key is in no error', async () => {
    const error = await refusal(client({ apiKey: 'SG.another-key.wrong' }).send(MESSAGE));
    assert.deepEqual(
      [error.details.httpStatus, error.details.indeterminate, error.details.transient],
      [401, false, false],
    );
    assert.match(error.message, /authorization grant is invalid/);
    assert.ok(!error.message.includes('SG.another-key.wrong'));
    assertNothingSecret(error);
    const missing = await post(JSON.stringify(valid()), { authorization: '' });
    assert.equal(missing.status, 401);
    assert.deepEqual(await errorsOf(missing), [
      { message: 'The provided authorization grant is invalid, expired, or revoked', field: null, help: null },
    ]);
    const basic = await post(JSON.stringify(valid()), { authorization: `Basic ${API_KEY}` });
    assert.equal(basic.status, 401);
    assert.deepEqual(simulator.sent(), []);
  });

  it('a from address that is not a verified sender is 403 naming from, not transient', async () => {
    const error = await refusal(client({ from: { email: 'someone@unverified.example' } }).send(MESSAGE));
    assert.deepEqual(
      [error.details.httpStatus, error.details.field, error.details.indeterminate, error.details.transient],
      [403, 'from', false, false],
    );
    assert.match(error.message, /verified Sender Identity/);
    assert.deepEqual(simulator.sent(), []);
  });

  it('an invalid recipient address is 400 naming the field personalizations.0.to.0.email, not transient', async () => {
    const error = await refusal(client().send({ ...MESSAGE, to: 'not an address' }));
    assert.deepEqual(
      [error.details.httpStatus, error.details.field, error.details.indeterminate, error.details.transient],
      [400, 'personalizations.0.to.0.email', false, false],
    );
    assert.match(error.message, /personalizations\.0\.to\.0\.email: Does not contain a valid address\./);
    assertNothingSecret(error);
    assert.deepEqual(simulator.sent(), []);
  });

  it('SendGrid failing (5xx) is transient and indeterminate; rate limited (429) transient, not indeterminate, with the wait', async () => {
    await control('/mode', 'PATCH', { send: 'error' });
    const error = await refusal(client().send(MESSAGE));
    assert.deepEqual(
      [error.details.httpStatus, error.details.transient, error.details.indeterminate],
      [500, true, true],
    );
    assertNothingSecret(error);
    await control('/mode', 'PATCH', { send: 'rateLimited' });
    const limited = await refusal(client().send(MESSAGE));
    assert.deepEqual(
      [limited.details.httpStatus, limited.details.transient, limited.details.indeterminate],
      [429, true, false],
    );
    assert.ok(limited.details.retryAfterMs! > 0 && limited.details.retryAfterMs! <= 60_000);
    assert.deepEqual(simulator.sent(), []);
  });

  it('no answer in time is indeterminate (the message may have gone out); an unreachable provider certainly sent nothing', async () => {
    await control('/mode', 'PATCH', { send: 'timeout' });
    const late = await refusal(client({ timeoutMs: 200 }).send(MESSAGE));
    assert.deepEqual([late.details.indeterminate, late.details.transient], [true, true]);
    assertNothingSecret(late);
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await refusal(client({ baseUrl: `http://127.0.0.1:${port}` }).send(MESSAGE));
    assert.deepEqual([unreachable.details.indeterminate, unreachable.details.transient], [false, true]);
    assert.match(unreachable.message, /ECONNREFUSED/);
  });

  it('the simulator refuses what SendGrid refuses: a body that is not JSON (400), not application/json (415), too large (413)', async () => {
    const notJson = await post('{"personalizations": [');
    assert.equal(notJson.status, 400);
    assert.deepEqual(await errorsOf(notJson), [{ message: 'Bad Request', field: null, help: null }]);
    const array = await post('[]');
    assert.equal(array.status, 400);
    const form = await post('subject=Hello', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(form.status, 415);
    assert.equal((await errorsOf(form)).length, 1);

    const small = await startEmailSimulator({ apiKey: API_KEY, verifiedSenders: [FROM.email], maxPayloadBytes: 1024 });
    try {
      const error = await refusal(
        createEmailClient({ baseUrl: small.url, apiKey: API_KEY, from: FROM }).send({
          ...MESSAGE,
          html: `<p>${'x'.repeat(4096)}</p>`,
        }),
      );
      assert.deepEqual(
        [error.details.httpStatus, error.details.transient, error.details.indeterminate],
        [413, false, false],
      );
    } finally {
      await small.close();
    }
    assert.deepEqual(simulator.sent(), []);
  });

  it('the simulator refuses a malformed request with every error naming its field: missing content, subject, from, text/html before text/plain', async () => {
    const { content: _content, ...noContent } = valid();
    const missing = await post(JSON.stringify(noContent));
    assert.equal(missing.status, 400);
    assert.deepEqual(
      (await errorsOf(missing)).map((e) => e.field),
      ['content'],
    );
    const empty = await post(JSON.stringify({ ...valid(), content: [{ type: 'text/plain', value: '' }] }));
    assert.deepEqual(await errorsOf(empty), [
      {
        message: 'The content value must be a string at least one character in length.',
        field: 'content.0.value',
        help: null,
      },
    ]);
    const several = await post(
      JSON.stringify({ personalizations: [{ to: [] }], from: { email: 'nobody' }, content: valid().content }),
    );
    assert.deepEqual(
      (await errorsOf(several)).map((e) => e.field),
      ['personalizations.0.to', 'from.email', 'subject'],
    );
    const none = await post(JSON.stringify({ ...valid(), personalizations: [], from: undefined, subject: undefined }));
    assert.deepEqual(
      (await errorsOf(none)).map((e) => e.field),
      ['personalizations', 'from.email', 'subject'],
    );
    const htmlFirst = await post(
      JSON.stringify({
        ...valid(),
        content: [
          { type: 'text/html', value: '<p>Hello</p>' },
          { type: 'text/plain', value: 'Hello' },
        ],
      }),
    );
    assert.equal(htmlFirst.status, 400);
    assert.deepEqual(
      (await errorsOf(htmlFirst)).map((e) => e.field),
      ['content'],
    );
    const perRecipientSubject = await post(
      JSON.stringify({ ...valid(), subject: undefined, personalizations: [{ to: [{ email: TO }], subject: 'Own' }] }),
    );
    assert.equal(perRecipientSubject.status, 202, 'a subject in every personalization stands in for the top one');
    assert.deepEqual(
      simulator.sent().map((m) => m.subject),
      ['Own'],
    );
  });

  it('delivery events are POSTed as a JSON array (processed, then delivered or bounce), sg_message_id leading back to the send', async () => {
    const received: EmailEvent[][] = [];
    const receiver = await stub((req, body, res) => {
      assert.equal(req.headers['content-type'], 'application/json');
      received.push(JSON.parse(body) as EmailEvent[]);
      res.writeHead(200).end();
    });
    try {
      await control('/mode', 'PATCH', { deliveryEventsUrl: `${receiver.url}/email/events`, deliveryDelayMs: 0 });
      const delivered = await client().send(MESSAGE);
      await control('/mode', 'PATCH', { delivery: 'bounce' });
      const bounced = await client().send({ ...MESSAGE, to: 'gone@customer.example' });
      const deadline = Date.now() + 5_000;
      while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const events = received.flat();
      const of = (messageId: string) => events.filter((e) => messageIdOf(e.sg_message_id) === messageId);
      assert.deepEqual(
        of(delivered.messageId).map((e) => [e.event, e.email, e.response]),
        [
          ['processed', TO, undefined],
          ['delivered', TO, '250 OK'],
        ],
      );
      const bounce = of(bounced.messageId);
      assert.deepEqual(
        bounce.map((e) => [e.event, e.email, e.type, e.status]),
        [
          ['processed', 'gone@customer.example', undefined, undefined],
          ['bounce', 'gone@customer.example', 'bounce', '5.1.1'],
        ],
      );
      for (const event of events) {
        assert.ok(Number.isInteger(event.timestamp) && event.timestamp > 1_600_000_000);
        assert.match(event.sg_event_id, /^[A-Za-z0-9_-]+$/);
      }
      assert.equal(new Set(events.map((e) => e.sg_event_id)).size, events.length);
    } finally {
      await receiver.close();
    }
  });

  it('answers the simulator never gives: 202 without X-Message-Id is indeterminate, 200 (sandbox) sent nothing, and no key or body reaches an error even when the provider echoes them', async () => {
    const answers: [number, Record<string, string>, (body: string) => string][] = [
      [202, {}, () => ''],
      [200, {}, () => ''],
      // A provider (or a proxy) echoing the request in its refusal: the message and key are redacted.
      [
        400,
        { 'content-type': 'application/json' },
        (body) => JSON.stringify({ errors: [{ message: `cannot send ${body}`, field: 'content', help: null }] }),
      ],
      [502, { 'content-type': 'text/html' }, () => '<html>Bad Gateway</html>'],
    ];
    let next = 0;
    const provider = await stub((req, body, res) => {
      const [status, headers, answer] = answers[next++]!;
      res.writeHead(status, headers).end(answer(`${req.headers.authorization} ${body}`));
    });
    try {
      const send = () => createEmailClient({ baseUrl: provider.url, apiKey: API_KEY, from: FROM }).send(MESSAGE);
      const noId = await refusal(send());
      assert.deepEqual([noId.details.httpStatus, noId.details.indeterminate], [202, true]);
      const sandbox = await refusal(send());
      assert.deepEqual(
        [sandbox.details.httpStatus, sandbox.details.indeterminate, sandbox.details.transient],
        [200, false, false],
      );
      const echoed = await refusal(send());
      assert.equal(echoed.details.field, 'content');
      assert.match(echoed.message, /\[redacted\]/);
      assertNothingSecret(echoed);
      const gateway = await refusal(send());
      assert.deepEqual(
        [gateway.details.httpStatus, gateway.details.indeterminate, gateway.details.transient],
        [502, true, true],
      );
      assertNothingSecret(gateway);
    } finally {
      await provider.close();
    }
  });
});

import { strict as assert } from 'node:assert';
import { randomInt, randomUUID } from 'node:crypto';
import { fingerprintOf } from '../../api/middleware/idempotency';
import { scheduleIds } from '../../workflows/ids';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call, type Reply } from '../support/http';
import { idempotentExecutions } from '../support/test-routes';
import { backendToken, bearer } from '../support/tokens';

const PATH = '/v1/transactions/__test__/idempotent';
const { users } = DEMO;

/** A body value no other test uses: the test route counts executions per value. */
const freshValue = () => randomInt(1, 2 ** 47);
const executions = (value: number) => idempotentExecutions.get(value) ?? 0;
const keyRows = (key: string) => harness().db('idempotency_keys').where({ key });

async function post(
  key: string | undefined,
  body: unknown,
  options: { user?: { id: string }; path?: string; raw?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = bearer(await backendToken((options.user ?? users.customer).id));
  if (key !== undefined) headers['Idempotency-Key'] = key;
  return options.raw !== undefined
    ? call('POST', options.path ?? PATH, { headers, raw: options.raw, contentType: 'application/json' })
    : call('POST', options.path ?? PATH, { headers, json: body });
}

function assertPlainError(reply: Reply, status: number, code: string) {
  assert.equal(reply.status, status, reply.text);
  assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description']);
  assert.equal(reply.body.code, code);
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('spec 4.3: Idempotency-Key on money-moving POSTs', () => {
  describe('first request and identical retries', () => {
    it('the first request with a key executes once and its answer is stored as the exact bytes sent', async () => {
      const key = randomUUID();
      const value = freshValue();
      const reply = await post(key, { value });
      assert.equal(reply.status, 201);
      assert.equal(reply.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 1);
      const [row] = await keyRows(key);
      assert.equal(row.state, 'DONE');
      assert.equal(row.response_status, 201);
      assert.equal(row.response_body, reply.text);
      assert.ok(row.expires_at > new Date(Date.now() + harness().config.IDEMPOTENCY_KEY_TTL - 60_000));
    });

    it('an identical retry replays the status and a byte-identical body with Idempotent-Replayed: true, without executing', async () => {
      const key = randomUUID();
      const value = freshValue();
      const first = await post(key, { value });
      const again = await post(key, { value });
      assert.equal(again.status, first.status);
      assert.equal(again.text, first.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.match(again.headers.get('content-type') ?? '', /^application\/json/);
      assert.match(first.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(again.headers.get('content-length'), first.headers.get('content-length'));
      assert.equal(executions(value), 1);
    });

    it('the request fingerprint ignores the order of body fields', async () => {
      const key = randomUUID();
      const value = freshValue();
      const first = await post(key, undefined, { raw: `{"value":${value},"delay_ms":0}` });
      const again = await post(key, undefined, { raw: `{"delay_ms":0,"value":${value}}` });
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.text, first.text);
      assert.equal(executions(value), 1);
      assert.equal(
        fingerprintOf({ params: {}, body: { a: 1, b: { c: 2, d: [1, { f: 1, e: 2 }] } } }),
        fingerprintOf({ body: { b: { d: [1, { e: 2, f: 1 }], c: 2 }, a: 1 }, params: {} }),
      );
    });

    it('without a key every request executes', async () => {
      const value = freshValue();
      const first = await post(undefined, { value });
      const second = await post(undefined, { value });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assert.equal(second.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 2);
    });
  });

  describe('a key reused for another request', () => {
    it('a key reused with a different body is 409 IDEMPOTENCY_KEY_REUSED and does not execute', async () => {
      const key = randomUUID();
      const value = freshValue();
      const other = freshValue();
      await post(key, { value });
      const reply = await post(key, { value: other });
      assertPlainError(reply, 409, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(executions(other), 0);
      const [row] = await keyRows(key);
      assert.equal(row.state, 'DONE', 'the stored answer is kept');
    });

    it('a key reused with different path parameters is 409 IDEMPOTENCY_KEY_REUSED', async () => {
      const key = randomUUID();
      const value = freshValue();
      const first = await post(key, { value }, { path: `${PATH}/ref-a` });
      assert.equal(first.status, 201);
      const reply = await post(key, { value }, { path: `${PATH}/ref-b` });
      assertPlainError(reply, 409, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(executions(value), 1);
    });
  });

  describe('the key header (spec 8: at most 255 characters)', () => {
    it('a 256-character key is 400 BAD_REQUEST naming the header, and nothing executes or is stored', async () => {
      const key = 'k'.repeat(256);
      const value = freshValue();
      const reply = await post(key, { value });
      assertPlainError(reply, 400, 'BAD_REQUEST');
      assert.match(reply.body.description, /header\.idempotency-key/);
      assert.equal(executions(value), 0);
      assert.equal((await keyRows(key)).length, 0);
    });

    it('a 255-character key is accepted and honoured', async () => {
      const key = `${randomUUID()}${'k'.repeat(255 - 36)}`;
      assert.equal(key.length, 255);
      const value = freshValue();
      const first = await post(key, { value });
      assert.equal(first.status, 201);
      const again = await post(key, { value });
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(executions(value), 1);
    });

    it('an empty key is 400 BAD_REQUEST and nothing executes', async () => {
      const value = freshValue();
      const reply = await post('', { value });
      assertPlainError(reply, 400, 'BAD_REQUEST');
      assert.match(reply.body.description, /header\.idempotency-key/);
      assert.equal(executions(value), 0);
    });
  });

  describe('concurrency', () => {
    it('spec 4.3 "identical retries replay it": a retry while the first still runs waits for its answer and replays it byte for byte; only the first executes', async () => {
      const key = randomUUID();
      const value = freshValue();
      const first = post(key, { value, delay_ms: 400 });
      await until(() => executions(value) === 1);
      const duplicate = await post(key, { value, delay_ms: 400 });
      const done = await first;
      assert.equal(done.status, 201);
      assert.equal(duplicate.status, 201, duplicate.text);
      assert.equal(duplicate.headers.get('idempotent-replayed'), 'true');
      assert.equal(duplicate.text, done.text);
      assert.equal(executions(value), 1);
    });

    it('past IDEMPOTENCY_WAIT, a retry of a request still running is 409 IDEMPOTENCY_REQUEST_IN_PROGRESS with Retry-After, telling to resend the same request; the first still executes once', async () => {
      const key = randomUUID();
      const value = freshValue();
      const longer = harness().config.IDEMPOTENCY_WAIT + 1_000;
      const first = post(key, { value, delay_ms: longer });
      await until(() => executions(value) === 1);
      const started = Date.now();
      const duplicate = await post(key, { value, delay_ms: longer });
      assert.ok(Date.now() - started >= harness().config.IDEMPOTENCY_WAIT - 50, 'it waited first');
      assertPlainError(duplicate, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS');
      assert.ok(Number(duplicate.headers.get('retry-after')) >= 1);
      assert.match(duplicate.body.description, /still executing: resend the same request/);
      const done = await first;
      assert.equal(done.status, 201);
      const later = await post(key, { value, delay_ms: longer });
      assert.equal(later.headers.get('idempotent-replayed'), 'true');
      assert.equal(later.text, done.text);
      assert.equal(executions(value), 1);
    });

    it('a retry waiting on a first execution that fails (its key released, nothing stored) executes in its place, once', async () => {
      const key = randomUUID();
      const value = freshValue();
      const first = post(key, { value, delay_ms: 300, fail: 'throw' });
      await until(() => executions(value) === 1);
      const retry = await post(key, { value, delay_ms: 300, fail: 'throw' });
      assert.equal((await first).status, 503);
      assert.equal(retry.status, 503, 'executed again, not replayed');
      assert.equal(retry.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 2);
    });

    it('retries piling up on one key are bounded: past 64 waiting on one instance, the rest are told 409 in progress at once; the first still executes once and the waiters replay it', async function () {
      this.timeout(30_000);
      const key = randomUUID();
      const value = freshValue();
      const token = bearer(await backendToken(users.customer.id));
      const send = () =>
        call('POST', PATH, { headers: { ...token, 'Idempotency-Key': key }, json: { value, delay_ms: 1_500 } });
      const first = send();
      await until(() => executions(value) === 1);
      const replies = await Promise.all(Array.from({ length: 80 }, send));
      const done = await first;
      assert.equal(done.status, 201);
      const replayed = replies.filter((r) => r.status === 201);
      const refused = replies.filter((r) => r.status === 409);
      assert.equal(replayed.length + refused.length, 80, replies.map((r) => r.status).join());
      assert.equal(replayed.length, 64, 'as many as may wait');
      for (const reply of replayed) assert.equal(reply.text, done.text);
      for (const reply of refused) assert.equal(reply.body.code, 'IDEMPOTENCY_REQUEST_IN_PROGRESS');
      assert.equal(executions(value), 1);
    });

    for (const delay of [0, 150]) {
      it(`50 concurrent identical requests execute exactly once and every one answers it (handler takes ${delay} ms)`, async function () {
        this.timeout(30_000);
        const key = randomUUID();
        const value = freshValue();
        const token = bearer(await backendToken(users.customer.id));
        const replies = await Promise.all(
          Array.from({ length: 50 }, () =>
            call('POST', PATH, { headers: { ...token, 'Idempotency-Key': key }, json: { value, delay_ms: delay } }),
          ),
        );
        assert.equal(executions(value), 1);
        const statuses = replies.map((r) => r.status);
        assert.ok(
          statuses.every((s) => s === 201),
          `statuses: ${statuses.join(',')}`,
        );
        const executed = replies.filter((r) => r.headers.get('idempotent-replayed') === null);
        assert.equal(executed.length, 1);
        for (const reply of replies) assert.equal(reply.text, executed[0]!.text);
      });
    }
  });

  describe('what is not stored', () => {
    it('a handler that throws stores nothing, so a retry with the same key executes again', async () => {
      const key = randomUUID();
      const value = freshValue();
      const failed = await post(key, { value, fail: 'throw' });
      assertPlainError(failed, 503, 'SERVICE_UNAVAILABLE');
      assert.equal((await keyRows(key)).length, 0);
      const crashed = await post(key, { value, fail: 'crash' });
      assertPlainError(crashed, 500, 'INTERNAL_SERVER_ERROR');
      assert.equal((await keyRows(key)).length, 0);
      const retried = await post(key, { value, fail: 'throw' });
      assert.equal(retried.status, 503);
      assert.equal(executions(value), 3);
    });

    it('a non-2xx answer stores nothing, so a retry with the same key executes again', async () => {
      const key = randomUUID();
      const value = freshValue();
      const answered = await post(key, { value, fail: 'answer' });
      assert.equal(answered.status, 503);
      assert.equal((await keyRows(key)).length, 0);
      const retried = await post(key, { value, fail: 'answer' });
      assert.equal(retried.status, 503);
      assert.equal(retried.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 2);
    });

    it('a validation failure stores nothing: the key still works for a valid request', async () => {
      const key = randomUUID();
      const value = freshValue();
      const invalid = await post(key, { value: 'not a number' });
      assertPlainError(invalid, 400, 'BAD_REQUEST');
      assert.equal((await keyRows(key)).length, 0);
      const valid = await post(key, { value });
      assert.equal(valid.status, 201);
      assert.equal(valid.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 1);
    });

    it('an authentication failure stores nothing', async () => {
      const key = randomUUID();
      const value = freshValue();
      const reply = await call('POST', PATH, { headers: { 'Idempotency-Key': key }, json: { value } });
      assertPlainError(reply, 401, 'UNAUTHORISED');
      assert.equal((await keyRows(key)).length, 0);
      assert.equal(executions(value), 0);
    });
  });

  describe('scope: the caller, the method and the route', () => {
    it('another caller with the same key executes separately', async () => {
      const key = randomUUID();
      const value = freshValue();
      const mine = await post(key, { value });
      const theirs = await post(key, { value }, { user: users.secondCustomer });
      assert.equal(mine.status, 201);
      assert.equal(theirs.status, 201);
      assert.equal(theirs.headers.get('idempotent-replayed'), null);
      assert.notEqual(theirs.body.id, mine.body.id);
      assert.equal(executions(value), 2);
      assert.equal(new Set((await keyRows(key)).map((r: { scope: string }) => r.scope)).size, 2);
    });

    it('the same key on another route executes separately', async () => {
      const key = randomUUID();
      const value = freshValue();
      const one = await post(key, { value });
      const other = await post(key, { value }, { path: `${PATH}/ref-a` });
      assert.equal(one.status, 201);
      assert.equal(other.status, 201);
      assert.equal(other.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 2);
    });
  });

  describe('expiry and crashed executors', () => {
    it('an expired key counts as absent: the request executes again and its new answer is stored', async () => {
      const key = randomUUID();
      const value = freshValue();
      const first = await post(key, { value });
      await keyRows(key).update({ expires_at: new Date(Date.now() - 1_000) });
      const again = await post(key, { value });
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), null);
      assert.notEqual(again.text, first.text);
      assert.equal(executions(value), 2);
      const [row] = await keyRows(key);
      assert.equal(row.response_body, again.text);
      assert.ok(row.expires_at > new Date());
    });

    it('an expired key may be reused with a different body', async () => {
      const key = randomUUID();
      await post(key, { value: freshValue() });
      await keyRows(key).update({ expires_at: new Date(Date.now() - 1_000) });
      const value = freshValue();
      const reply = await post(key, { value });
      assert.equal(reply.status, 201);
      assert.equal(executions(value), 1);
    });

    it('a RUNNING key whose lock has not run out and that is never answered is 409 IDEMPOTENCY_REQUEST_IN_PROGRESS once IDEMPOTENCY_WAIT has passed', async () => {
      const key = randomUUID();
      const value = freshValue();
      await post(key, { value });
      await keyRows(key).update({
        state: 'RUNNING',
        response_status: null,
        response_body: null,
        locked_until: new Date(Date.now() + 60_000),
      });
      const reply = await post(key, { value });
      assertPlainError(reply, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS');
      assert.equal(executions(value), 1);
    });

    it('a RUNNING key whose lock has run out (its executor died) is taken over: the retry executes and stores its answer', async () => {
      const key = randomUUID();
      const value = freshValue();
      await post(key, { value });
      await keyRows(key).update({
        state: 'RUNNING',
        response_status: null,
        response_body: null,
        locked_until: new Date(Date.now() - 1_000),
      });
      const takeover = await post(key, { value });
      assert.equal(takeover.status, 201);
      assert.equal(takeover.headers.get('idempotent-replayed'), null);
      assert.equal(executions(value), 2);
      const replay = await post(key, { value });
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.text, takeover.text);
      assert.equal(executions(value), 2);
    });

    it('a RUNNING key with a run-out lock is not taken over by a different body (409 IDEMPOTENCY_KEY_REUSED)', async () => {
      const key = randomUUID();
      await post(key, { value: freshValue() });
      await keyRows(key).update({
        state: 'RUNNING',
        response_status: null,
        response_body: null,
        locked_until: new Date(Date.now() - 1_000),
      });
      const value = freshValue();
      const reply = await post(key, { value });
      assertPlainError(reply, 409, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(executions(value), 0);
    });

    it('the idempotency-key-purge schedule deletes expired keys in bounded batches and keeps live ones', async function () {
      this.timeout(30_000);
      const { db, client, config } = harness();
      const scope = `purge-test-${randomUUID()}`;
      const past = new Date(Date.now() - 60_000);
      const future = new Date(Date.now() + 60_000);
      const row = (key: string, expiresAt: Date) => ({
        scope,
        key,
        fingerprint: 'f',
        state: 'DONE',
        lock_token: randomUUID(),
        response_status: 201,
        response_body: '{}',
        locked_until: past,
        expires_at: expiresAt,
      });
      const expired = Array.from({ length: 2_500 }, (_, i) => row(`expired-${i}`, past));
      await db.batchInsert('idempotency_keys', expired, 500);
      await db('idempotency_keys').insert(row('live', future));
      const schedule = client.schedule.getHandle(scheduleIds.idempotencyKeyPurge);
      const description = await schedule.describe();
      assert.equal((description.action as { workflowType: string }).workflowType, 'idempotencyKeyPurge');
      assert.deepEqual(
        description.spec.intervals?.map((i) => i.every),
        [config.IDEMPOTENCY_PURGE_INTERVAL],
      );
      await schedule.trigger();
      const left = async (): Promise<string[]> => db('idempotency_keys').where({ scope }).pluck('key');
      await until(async () => (await left()).length === 1, 20_000);
      assert.deepEqual(await left(), ['live']);
    });
  });

  describe('documentation', () => {
    it('the OpenAPI document describes the Idempotency-Key header, the 409 answers and Idempotent-Replayed', async () => {
      const { body } = await call('GET', '/openapi.json');
      const operation = body.paths[PATH].post;
      const header = operation.parameters.find(
        (p: { in: string; name: string }) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
      );
      assert.ok(header, 'Idempotency-Key header documented');
      assert.equal(header.required, false);
      assert.equal(header.schema.maxLength, 255);
      assert.match(header.description, /IDEMPOTENCY_KEY_REUSED/);
      assert.match(operation.responses['409'].description, /IDEMPOTENCY_KEY_REUSED/);
      assert.match(operation.responses['409'].description, /IDEMPOTENCY_REQUEST_IN_PROGRESS/);
      assert.ok(operation.responses['201'].headers['Idempotent-Replayed']);
    });
  });
});

import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { buildApp } from '../../api/app';
import { type RunningApi, startApi } from '../../api/server';
import type { Config } from '../../config';
import { scheduleIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { call } from '../support/http';
import {
  callbacksRecorded,
  insertStkPushTransaction,
  newCustomer,
  postCallback,
  pushAccepted,
  refusedCallbacks,
  settled,
  transactionRow,
  until,
} from '../support/money';
import { testRoutes } from '../support/test-routes';

const stkPath = (id: string, token: string) => `/v1/transactions/mobilemoney/callbacks/stk/${id}/${token}`;
const anyCallback = {
  Body: { stkCallback: { MerchantRequestID: 'x', CheckoutRequestID: 'ws_CO_x', ResultCode: 0, ResultDesc: 'x' } },
};

/** A second API instance over the harness's parts, with some settings changed. */
async function apiWith(changes: Partial<Config>): Promise<RunningApi> {
  const { deps } = harness();
  return startApi(
    buildApp({ ...deps, config: { ...deps.config, ...changes } }, { extraRoutes: testRoutes() }),
    '127.0.0.1',
    0,
  );
}

describe('attack run, finding 2: no caller without credentials can store an unbounded amount through the callback routes', () => {
  it('300 callbacks with a wrong token or an unknown transaction are refused 404, counted and logged, and none is stored', async () => {
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 10_000 });
    await settled(customer.headers, created.id);
    const { db } = harness();
    const storedBefore = Number((await db('mobile_money_callbacks').count('* as n'))[0]!.n);
    const refusedBefore = await refusedCallbacks('token');
    const padding = 'x'.repeat(12_000); // each as large as the body limit allows
    const body = { ...anyCallback, padding };
    const statuses = new Set<number>();
    for (let batch = 0; batch < 10; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          call('POST', stkPath(i % 2 ? created.id : randomUUID(), randomBytes(24).toString('base64url')), {
            json: body,
          }),
        ),
      );
      for (const reply of replies) statuses.add(reply.status);
    }
    assert.deepEqual([...statuses], [404]);
    assert.equal(Number((await db('mobile_money_callbacks').count('* as n'))[0]!.n), storedBefore, 'nothing stored');
    assert.equal(await refusedCallbacks('token'), refusedBefore + 300);
  });

  it('a transaction stores at most CALLBACKS_STORED_PER_RESOURCE callbacks; the rest are counted, not stored', async () => {
    const { config } = harness();
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 10_000 });
    await settled(customer.headers, created.id);
    const row = await transactionRow(created.id);
    await until('its own callback stored', async () => (await callbacksRecorded(created.id)).length === 1);
    const overBefore = await refusedCallbacks('over_cap');
    const extra = config.CALLBACKS_STORED_PER_RESOURCE + 10;
    for (let i = 0; i < extra; i++)
      assert.equal((await postCallback('stk', row, anyCallback)).status, 200, 'acknowledged (late)');
    const stored = await callbacksRecorded(created.id);
    assert.equal(stored.length, config.CALLBACKS_STORED_PER_RESOURCE);
    assert.equal(await refusedCallbacks('over_cap'), overBefore + extra - (config.CALLBACKS_STORED_PER_RESOURCE - 1));
  });

  it('a callback body over CALLBACK_BODY_LIMIT is refused 413 before anything is read into storage', async () => {
    const { config } = harness();
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 10_000 });
    const row = await transactionRow(created.id);
    const reply = await postCallback('stk', row, { ...anyCallback, padding: 'x'.repeat(config.CALLBACK_BODY_LIMIT) });
    assert.equal(reply.status, 413);
    assert.deepEqual(reply.body, { code: 'PAYLOAD_TOO_LARGE', description: 'Payload Too Large' });
    await settled(customer.headers, created.id);
    assert.ok((await callbacksRecorded(created.id)).every((r) => r.raw.length < config.CALLBACK_BODY_LIMIT));
  });

  it("callback routes have their own rate limit per source address (429 with Retry-After), apart from the callers' budgets", async () => {
    const api = await apiWith({ RATE_LIMIT_CALLBACK_POINTS: 5, RATE_LIMIT_CALLER_POINTS: 100_000 });
    try {
      const statuses = [];
      for (let i = 0; i < 7; i++)
        statuses.push(
          (await call('POST', stkPath(randomUUID(), 'guess'), { json: anyCallback, baseUrl: api.url })).status,
        );
      assert.deepEqual(statuses, [404, 404, 404, 404, 404, 429, 429]);
      const limited = await call('POST', '/v1/kyc/provider-callbacks/v2', { json: {}, baseUrl: api.url });
      assert.equal(limited.status, 429, 'one budget for every callback route from an address');
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
      assert.equal(
        (await call('GET', '/v1/auth/whoami', { baseUrl: api.url })).status,
        401,
        'client routes keep their own budget',
      );
    } finally {
      await api.close();
    }
  });

  it("with the provider's source addresses configured, a callback from any other address is refused 403 and not stored", async () => {
    const elsewhere = await apiWith({
      MOBILE_MONEY_CALLBACK_SOURCES: ['196.201.214.0/24'],
      KYC_CALLBACK_SOURCES: ['196.201.214.200'],
    });
    const here = await apiWith({ MOBILE_MONEY_CALLBACK_SOURCES: ['10.0.0.0/8', '127.0.0.1'] });
    try {
      const refused = await call('POST', stkPath(randomUUID(), 'token'), { json: anyCallback, baseUrl: elsewhere.url });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'FORBIDDEN');
      assert.equal(
        (await call('POST', '/v1/kyc/provider-callbacks/v3', { json: {}, baseUrl: elsewhere.url })).status,
        403,
      );
      assert.equal(await refusedCallbacks('source', { baseUrl: elsewhere.url }), 1);
      assert.equal(await refusedCallbacks('source', { provider: 'kyc', baseUrl: elsewhere.url }), 1);
      const allowed = await call('POST', stkPath(randomUUID(), 'token'), { json: anyCallback, baseUrl: here.url });
      assert.equal(allowed.status, 404, 'from a listed address it is checked as usual');
    } finally {
      await Promise.all([elsewhere.close(), here.close()]);
    }
  });

  it('raw callbacks and payout status queries older than CALLBACK_RETENTION are purged by the callback-retention schedule; newer ones stay', async () => {
    const { db, client, config } = harness();
    const old = new Date(Date.now() - config.CALLBACK_RETENTION - 86_400_000);
    const payout = await insertStkPushTransaction(await newCustomer(), 100_000);
    const query = (asked_at: Date) => ({
      id: randomUUID(),
      transaction_id: payout.id,
      organization_id: payout.organization_id,
      token: randomBytes(24).toString('base64url'),
      asked_at,
    });
    const [oldQuery, newQuery] = [query(old), query(new Date())];
    await db('payout_status_queries').insert([oldQuery, newQuery]);
    const ref = randomUUID();
    await db('mobile_money_callbacks').insert([
      { kind: 'STK', transaction_ref: ref, raw: '{}', disposition: 'LATE', received_at: old },
      { kind: 'STK', transaction_ref: ref, raw: '{"recent":true}', disposition: 'LATE' },
    ]);
    const oldEvent = `test:${randomUUID()}`;
    await db('kyc_callback_events').insert({ api_version: 'v2', event_id: oldEvent, raw_body: '{}', received_at: old });

    const schedule = client.schedule.getHandle(scheduleIds.callbackRetention);
    const description = await schedule.describe();
    assert.equal(description.action.type, 'startWorkflow');
    assert.equal((description.action as { workflowType: string }).workflowType, 'callbackRetention');
    assert.deepEqual(
      description.spec.intervals?.map((i) => i.every),
      [config.CALLBACK_PURGE_INTERVAL],
    );
    await schedule.trigger();
    await until(
      'old callbacks purged',
      async () => (await db('mobile_money_callbacks').where({ transaction_ref: ref })).length === 1,
      20_000,
    );
    assert.deepEqual(
      (await callbacksRecorded(ref)).map((r) => r.raw),
      ['{"recent":true}'],
    );
    await until(
      'old KYC event purged',
      async () => (await db('kyc_callback_events').where({ event_id: oldEvent })).length === 0,
      20_000,
    );
    await until(
      'old status query purged',
      async () => (await db('payout_status_queries').where({ transaction_id: payout.id })).length === 1,
      20_000,
    );
    assert.deepEqual(
      (await db('payout_status_queries').where({ transaction_id: payout.id })).map((q) => q.id),
      [newQuery.id],
    );
  });
});

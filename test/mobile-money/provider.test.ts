import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { MalformedCallbackError, parseB2cResult, parseStkCallback } from '../../providers/mobile-money/callbacks';
import { createMobileMoneyClient } from '../../providers/mobile-money/client';
import {
  fromProviderTimestamp,
  type MobileMoneyClient,
  type MobileMoneyClientOptions,
  MobileMoneyError,
  providerTimestamp,
  toProviderPhone,
  toWholeShillings,
} from '../../providers/mobile-money/protocol';
import { type RunningMobileMoneySimulator, startMobileMoneySimulator } from '../../simulators/mobile-money';
import { startCallbackReceiver } from '../support/receiver';

/**
 * The mobile-money client against its simulator, over HTTP, with a small server standing in for
 * our callback routes (protocols/mobile-money.md). No database or Temporal involved.
 */
const CREDENTIALS = {
  consumerKey: 'test-key',
  consumerSecret: 'test-secret-not-real',
  shortCode: '174379',
  passkey: 'test-passkey-not-real',
};
const INITIATOR = { initiatorName: 'test-initiator', initiatorPassword: 'test-initiator-password-not-real' };
const PHONE = (lastDigit: number) => `+25471234567${lastDigit}`;

interface Received {
  path: string;
  body: unknown;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function rejection(work: () => Promise<unknown>): Promise<MobileMoneyError> {
  try {
    await work();
  } catch (error) {
    if (error instanceof MobileMoneyError) return error;
    throw error;
  }
  assert.fail('expected a MobileMoneyError');
}

describe('protocol: the mobile-money client against its simulator', () => {
  const received: Received[] = [];
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let hook = '';
  let sim: RunningMobileMoneySimulator;
  let options: MobileMoneyClientOptions;
  let client: MobileMoneyClient;

  before(async () => {
    receiver = await startCallbackReceiver(received);
    hook = receiver.url;
    sim = await startMobileMoneySimulator({ ...CREDENTIALS, ...INITIATOR, callbackDelayMs: 30 });
    options = { ...CREDENTIALS, ...INITIATOR, certificate: sim.certificate, baseUrl: sim.url, timeoutMs: 3_000 };
    client = createMobileMoneyClient(options);
  });
  after(async () => {
    await sim.close();
    receiver.close();
  });
  // Every test starts from the default modes (the simulator is this file's own).
  afterEach(() => sim.control.reset());

  const controlCall = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${sim.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    assert.ok(response.ok, `${method} /_control${path}: ${response.status}`);
    return response.status === 204 ? undefined : ((await response.json()) as unknown);
  };
  const waitFor = async (path: string, ms = 2_000): Promise<Received> => {
    for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(10)) {
      const hit = received.find((r) => r.path === path);
      if (hit) return hit;
    }
    throw new Error(`no callback at ${path} within ${ms} ms`);
  };
  const callbacksFor = (path: string) => received.filter((r) => r.path === path);
  const callbackUrl = () => `${hook}/callbacks/${randomBytes(12).toString('hex')}`;
  const pathOf = (url: string) => new URL(url).pathname;
  const push = (lastDigit: number, url = callbackUrl(), amount = 10) =>
    client.stkPush({
      amount,
      phone: PHONE(lastDigit),
      callbackUrl: url,
      accountReference: 'LOAN-0001-REPAYMENT',
      description: 'Loan repayment now',
      transactionType: 'CustomerPayBillOnline',
    });
  const b2c = (lastDigit: number, originatorConversationId = randomUUID()) =>
    client.b2c({
      originatorConversationId,
      amount: 250,
      phone: PHONE(lastDigit),
      resultUrl: `${hook}/b2c/result/${originatorConversationId}`,
      queueTimeoutUrl: `${hook}/b2c/timeout/${originatorConversationId}`,
      remarks: 'Loan disbursement',
    });

  describe('OAuth', () => {
    it('client credentials give a token, cached between calls; wrong credentials are refused 400.008.01', async () => {
      const token = await client.accessToken();
      assert.ok(token.length > 10);
      assert.equal(await client.accessToken(), token, 'cached');
      const bad = await fetch(`${sim.url}/oauth/v1/generate?grant_type=client_credentials`, {
        headers: { authorization: `Basic ${Buffer.from('x:y').toString('base64')}` },
      });
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as { errorCode: string }).errorCode, '400.008.01');
    });

    it('a failing OAuth call is a definite error (the request was never sent)', async () => {
      await controlCall('PATCH', '/mode', { failOAuth: true });
      const error = await rejection(() =>
        createMobileMoneyClient(options).stkPush({
          amount: 1,
          phone: PHONE(0),
          callbackUrl: callbackUrl(),
          accountReference: 'A',
          description: 'B',
          transactionType: 'CustomerPayBillOnline',
        }),
      );
      assert.equal(error.operation, 'oauth');
      assert.equal(error.httpStatus, 503);
      assert.equal(error.indeterminate, false);
      assert.equal(sim.control.pushes().length, 0);
    });

    it('an invalid token is answered 404.001.03; the client fetches a new token and the call goes through', async () => {
      const raw = await fetch(`${sim.url}/mpesa/stkpushquery/v1/query`, {
        method: 'POST',
        headers: { authorization: 'Bearer not-a-token', 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(raw.status, 404);
      assert.equal(((await raw.json()) as { errorCode: string }).errorCode, '404.001.03');
      const before = await client.accessToken();
      await controlCall('POST', '/tokens/revoke');
      const accepted = await push(0);
      assert.equal(accepted.responseCode, '0');
      assert.notEqual(await client.accessToken(), before, 'a new token');
    });
  });

  describe('push prompt (STK push) and its callback', () => {
    it('a push to a paying number is accepted, then a paid callback carries Amount, receipt, TransactionDate and PhoneNumber', async () => {
      const url = callbackUrl();
      const accepted = await push(0, url);
      assert.equal(accepted.responseCode, '0', 'accepted means accepted, not paid');
      assert.match(accepted.checkoutRequestId, /^ws_CO_/);
      const callback = parseStkCallback((await waitFor(pathOf(url))).body);
      assert.equal(callback.checkoutRequestId, accepted.checkoutRequestId);
      assert.equal(callback.merchantRequestId, accepted.merchantRequestId);
      assert.equal(callback.resultCode, '0');
      const m = callback.metadata;
      assert.equal(m?.amount, 10);
      assert.match(m?.receipt ?? '', /^SIM[A-Z0-9]{7}$/);
      assert.equal(
        m?.phone,
        PHONE(0).slice(1),
        'PhoneNumber as the provider sent it (the callback checks normalize it)',
      );
      assert.match(m?.transactionDate ?? '', /^\d{14}$/);
      const simulated = sim.control.pushes().find((p) => p.checkoutRequestId === accepted.checkoutRequestId);
      assert.equal(simulated?.accountReference, 'LOAN-0001-RE', 'AccountReference truncated to 12 characters');
      assert.equal(simulated?.description, 'Loan repaymen', 'TransactionDesc truncated to 13 characters');
      assert.equal(simulated?.phone, '254712345670', 'the provider form of the number');
    });

    it('a push the user cancels: callback ResultCode 1032 without CallbackMetadata', async () => {
      const url = callbackUrl();
      const accepted = await push(1, url);
      const callback = parseStkCallback((await waitFor(pathOf(url))).body);
      assert.equal(callback.checkoutRequestId, accepted.checkoutRequestId);
      assert.equal(callback.resultCode, '1032');
      assert.equal(callback.metadata, undefined);
    });

    it('a string ResultCode (SFC_IC0003) is read as a string, in the callback and the status query', async () => {
      const url = callbackUrl();
      const accepted = await push(6, url);
      const callback = parseStkCallback((await waitFor(pathOf(url))).body);
      assert.equal(callback.resultCode, 'SFC_IC0003');
      const status = await client.stkQuery(accepted.checkoutRequestId);
      assert.deepEqual(status.state === 'final' && status.resultCode, 'SFC_IC0003');
    });

    it('protocol: duplicate mode sends the same callback twice; reorder mode sends callbacks last-first', async () => {
      await controlCall('PATCH', '/mode', { callbacks: 'duplicate' });
      const dupUrl = callbackUrl();
      await push(0, dupUrl);
      await sleep(200);
      await controlCall('PATCH', '/mode', { callbacks: 'reorder', reorderWindowMs: 150 });
      const [first, second] = [callbackUrl(), callbackUrl()];
      await push(0, first);
      await push(1, second);
      await sleep(400);
      const duplicates = callbacksFor(pathOf(dupUrl));
      assert.equal(duplicates.length, 2, 'duplicated');
      assert.deepEqual(duplicates[0]!.body, duplicates[1]!.body);
      const order = received.map((r) => r.path).filter((p) => p === pathOf(first) || p === pathOf(second));
      assert.deepEqual(order, [pathOf(second), pathOf(first)], 'reordered');
    });

    it('protocol: the control API resends a callback with overrides (a wrong Amount)', async () => {
      const url = callbackUrl();
      const accepted = await push(0, url);
      await waitFor(pathOf(url));
      const sent = (await controlCall('POST', `/callbacks/${accepted.checkoutRequestId}/send`, { Amount: 1 })) as {
        status: number;
      };
      assert.equal(sent.status, 200);
      await sleep(50);
      const amounts = callbacksFor(pathOf(url)).map((r) => parseStkCallback(r.body).metadata?.amount);
      assert.deepEqual(amounts, [10, 1]);
    });
  });

  describe('status query', () => {
    it('protocol: "being processed" (500.001.1001) while undecided is pending, not a failure; then final', async () => {
      await controlCall('PATCH', '/mode', { callbackDelayMs: 300 });
      const accepted = await push(5);
      const early = await client.stkQuery(accepted.checkoutRequestId);
      await sleep(400);
      const late = await client.stkQuery(accepted.checkoutRequestId);
      assert.deepEqual(early, { state: 'pending' });
      assert.equal(late.state, 'final');
      assert.equal(late.state === 'final' && late.resultCode, '1019');
    });

    it('protocol: processingQueries answers "being processed" N times, then the final result', async () => {
      const url = callbackUrl();
      const accepted = await push(0, url);
      await waitFor(pathOf(url));
      await controlCall('PATCH', '/mode', { processingQueries: 2 });
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await client.stkQuery(accepted.checkoutRequestId));
      assert.deepEqual(
        answers.map((a) => a.state),
        ['pending', 'pending', 'final'],
      );
    });

    it('protocol: a lost callback never arrives, and the status query knows the outcome at once', async () => {
      await controlCall('PATCH', '/mode', { callbacks: 'lose' });
      const url = callbackUrl();
      const accepted = await push(2, url);
      const status = await client.stkQuery(accepted.checkoutRequestId);
      await sleep(100);
      assert.equal(status.state, 'final');
      assert.equal(status.state === 'final' && status.resultCode, '1037');
      assert.equal(callbacksFor(pathOf(url)).length, 0);
      assert.deepEqual(
        sim.control.callbacks().filter((c) => c.id === accepted.checkoutRequestId && !c.lost),
        [],
        'nothing was delivered',
      );
      assert.equal(
        sim.control.pushes().find((p) => p.checkoutRequestId === accepted.checkoutRequestId)?.callbacksSent,
        0,
      );
    });

    it('protocol: a delayed callback comes after the status query is already final', async () => {
      await controlCall('PATCH', '/mode', { callbacks: 'delay', lateCallbackMs: 300 });
      const url = callbackUrl();
      const accepted = await push(3, url);
      await sleep(100);
      const status = await client.stkQuery(accepted.checkoutRequestId);
      const earlyCallbacks = callbacksFor(pathOf(url)).length;
      const callback = parseStkCallback((await waitFor(pathOf(url))).body);
      assert.equal(status.state === 'final' && status.resultCode, '1');
      assert.equal(earlyCallbacks, 0);
      assert.equal(callback.resultCode, '1');
    });

    it('an unknown CheckoutRequestID is a definite 400.002.02, and a wrong Password is refused the same way', async () => {
      const token = await client.accessToken();
      const response = await fetch(`${sim.url}/mpesa/stkpush/v1/processrequest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ BusinessShortCode: '174379', Password: 'wrong', Timestamp: '20250101120000' }),
      });
      const envelope = (await response.json()) as { errorCode: string; errorMessage: string; requestId: string };
      assert.equal(response.status, 400);
      assert.equal(envelope.errorCode, '400.002.02');
      assert.match(envelope.errorMessage, /Password/);
      assert.ok(envelope.requestId);
      const error = await rejection(() => client.stkQuery('ws_CO_unknown'));
      assert.equal(error.indeterminate, false);
      assert.equal(error.errorCode, '400.002.02');
      assert.equal(error.httpStatus, 400);
    });
  });

  describe('indeterminate push answers (must never be sent again)', () => {
    it('a push answered 503 is indeterminate, and the simulator still delivered it', async () => {
      await controlCall('PATCH', '/mode', { pushFailWith: 503 });
      const url = callbackUrl();
      const error = await rejection(() => push(0, url));
      assert.equal(error.indeterminate, true);
      assert.equal(error.httpStatus, 503);
      assert.equal(error.operation, 'stkPush');
      await waitFor(pathOf(url));
    });

    it('a push that times out is indeterminate', async () => {
      await controlCall('PATCH', '/mode', { pushFailWith: 'timeout' });
      const hasty = createMobileMoneyClient({ ...options, timeoutMs: 300 });
      const error = await rejection(() =>
        hasty.stkPush({
          amount: 5,
          phone: PHONE(9),
          callbackUrl: callbackUrl(),
          accountReference: 'A',
          description: 'B',
          transactionType: 'CustomerPayBillOnline',
        }),
      );
      assert.equal(error.indeterminate, true);
      assert.equal(error.httpStatus, undefined);
    });
  });

  describe('send money (B2C)', () => {
    it('a payout that goes through: the result at ResultURL with its parameters', async () => {
      const id = randomUUID();
      const accepted = await b2c(0, id);
      assert.equal(accepted.responseCode, '0');
      assert.equal(accepted.originatorConversationId, id);
      const result = parseB2cResult((await waitFor(`/b2c/result/${id}`)).body);
      assert.equal(result.resultCode, '0');
      assert.equal(result.conversationId, accepted.conversationId);
      assert.equal(result.parameters.TransactionAmount, 250);
      assert.equal(typeof result.parameters.TransactionReceipt, 'string');
      assert.ok(result.referenceData.QueueTimeoutURL);
    });

    it('a queue timeout arrives at QueueTimeOutURL, not at ResultURL', async () => {
      const id = randomUUID();
      await b2c(7, id);
      const timeout = parseB2cResult((await waitFor(`/b2c/timeout/${id}`)).body);
      await sleep(50);
      assert.equal(timeout.originatorConversationId, id);
      assert.notEqual(timeout.resultCode, '0');
      assert.equal(callbacksFor(`/b2c/result/${id}`).length, 0);
    });

    it('a repeated OriginatorConversationID is refused (what makes a retried payout safe)', async () => {
      const id = randomUUID();
      await b2c(0, id);
      const error = await rejection(() => b2c(0, id));
      assert.equal(error.httpStatus, 400);
      assert.equal(error.errorCode, '400.002.02');
      assert.equal(error.indeterminate, false);
      assert.equal(error.duplicateRequest, true);
      assert.equal(sim.control.payments().filter((p) => p.originatorConversationId === id).length, 1);
    });
  });

  describe('parsing and conversions at the edge', () => {
    it('the callback parsers refuse malformed bodies with MalformedCallbackError', () => {
      for (const body of [{}, { Body: { stkCallback: { MerchantRequestID: 'm' } } }, 'not json']) {
        assert.throws(() => parseStkCallback(body), MalformedCallbackError);
      }
      assert.throws(() => parseB2cResult({ Result: { ResultCode: 0 } }), MalformedCallbackError);
    });

    it('amounts: minor units to whole shillings, refusing cents (1050) and non-positive values', () => {
      assert.equal(toWholeShillings(1000), 10);
      for (const bad of [1050, 0, -100, 1.5]) assert.throws(() => toWholeShillings(bad), RangeError, String(bad));
    });

    it('phones: +2547/+2541 to the provider form; other countries and local forms are refused', () => {
      assert.equal(toProviderPhone('+254712345678'), '254712345678');
      assert.equal(toProviderPhone('+254112345678'), '254112345678');
      for (const bad of ['+255712345678', '0712345678', '+25471234567', '+254212345678', '254712345678']) {
        assert.throws(() => toProviderPhone(bad), RangeError, bad);
      }
    });

    it('timestamps are East Africa Time (UTC+3) YYYYMMDDHHmmss, both ways', () => {
      const at = new Date('2026-01-31T22:15:09Z');
      assert.equal(providerTimestamp(at), '20260201011509');
      assert.equal(fromProviderTimestamp('20260201011509').toISOString(), at.toISOString());
    });
  });
});

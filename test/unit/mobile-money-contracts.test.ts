import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { parseB2cResult, parseStkCallback, parseTransactionStatusResult } from '../../providers/mobile-money/callbacks';
import { createMobileMoneyClient } from '../../providers/mobile-money/client';
import type { MobileMoneyClient } from '../../providers/mobile-money/protocol';
import { securityCredentials } from '../../providers/mobile-money/security-credential';
import { type RunningMobileMoneySimulator, startMobileMoneySimulator } from '../../simulators/mobile-money';
import { credentialKeys } from '../../simulators/mobile-money/credential';
import {
  differences,
  type Exchange,
  exchange,
  type FakeProvider,
  loadExchanges,
  type RecordedRequest,
  startFakeProvider,
} from '../contracts/contract';

/**
 * The mobile-money provider's documented exchanges (test/contracts/mobile-money/*.json), checked
 * from both sides over HTTP: our client sends exactly the recorded request and reads the
 * documented answer; the simulator accepts the recorded request and answers as documented, and
 * sends the documented callbacks, which our parser reads. Client and simulator are held to the
 * same file, so they cannot drift away from the provider together.
 */
const exchanges = loadExchanges('mobile-money');
const fixture = (call: string) => exchange(exchanges, call);

/** The samples' sandbox shortcode and passkey, so the documented Password is the one computed. */
const CONTRACT = {
  consumerKey: 'contract-consumer-key',
  consumerSecret: 'contract-consumer-secret',
  shortCode: '174379',
  passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919',
  b2cShortCode: '600996',
  initiatorName: 'testapi',
  initiatorPassword: 'contract-initiator-password',
};
/** The samples' Timestamp, 20160216165627 Nairobi time. */
const SAMPLE_TIME = new Date('2016-02-16T13:56:27Z');

type Body = Record<string, unknown>;
const bodyOf = (exchange: Exchange) => exchange.request.body as Body;
const noDifferences = (exchange: Exchange, prefix: string, actual: unknown) =>
  assert.deepEqual(differences(exchange, prefix, actual), [], `${exchange.call} ${prefix}`);
/** A recorded request in the fixture's form (a GET has no body at all). */
const asRequest = ({ method, path, headers, body }: RecordedRequest) => ({
  method,
  path,
  headers,
  ...(body !== undefined && { body }),
});

describe('unit: contract fixtures of the mobile-money provider', () => {
  it('every fixture matches its own patterns, and every call of the note has one', () => {
    for (const exchange of exchanges.values()) {
      noDifferences(exchange, 'request', exchange.request);
      noDifferences(exchange, 'answer', exchange.answer);
    }
    assert.deepEqual([...exchanges.keys()].sort(), [
      'b2c-queue-timeout',
      'b2c-result-failure',
      'b2c-result-success',
      'b2c-v1',
      'b2c-v3',
      'oauth',
      'stk-callback-cancelled',
      'stk-callback-paid',
      'stk-push',
      'stk-query-paid',
      'stk-query-processing',
      'transaction-status',
      'transaction-status-result-completed',
      'transaction-status-result-not-found',
    ]);
  });
});

describe('unit: contract: the mobile-money client sends the documented requests and reads the documented answers', () => {
  const keys = credentialKeys();
  let fake: FakeProvider | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  /** A client against a fake provider answering the OAuth fixture and `call`'s. */
  async function clientFor(call: string): Promise<MobileMoneyClient> {
    fake = await startFakeProvider([fixture('oauth'), fixture(call)]);
    return createMobileMoneyClient({
      ...CONTRACT,
      certificate: keys.certificate,
      baseUrl: fake.url,
      clock: () => SAMPLE_TIME,
    });
  }
  const sent = (call: string) => fake!.requestsFor(fixture(call)).map(asRequest);

  it('oauth: Basic client credentials; the token (expires_in a string) is read and reused', async () => {
    const client = await clientFor('oauth');
    const token = await client.accessToken();
    assert.equal(token, (fixture('oauth').answer.body as Body).access_token);
    assert.equal(await client.accessToken(), token, 'cached');
    const [request, ...more] = sent('oauth');
    assert.equal(more.length, 0);
    noDifferences(fixture('oauth'), 'request', request);
  });

  it('stk-push: the documented body, Password and Timestamp included; accepted means accepted, not paid', async () => {
    const client = await clientFor('stk-push');
    const answer = fixture('stk-push').answer.body as Body;
    const accepted = await client.stkPush({
      amount: 1,
      phone: '+254708374149',
      callbackUrl: 'https://mydomain.com/path',
      accountReference: 'CompanyXLTD',
      description: 'Payment of X',
      transactionType: 'CustomerPayBillOnline',
    });
    noDifferences(fixture('stk-push'), 'request', sent('stk-push')[0]);
    assert.deepEqual(accepted, {
      merchantRequestId: answer.MerchantRequestID,
      checkoutRequestId: answer.CheckoutRequestID,
      responseCode: '0',
      customerMessage: answer.CustomerMessage,
    });
  });

  it('stk-query-paid: the documented query; a string ResultCode "0" is final', async () => {
    const client = await clientFor('stk-query-paid');
    const status = await client.stkQuery(String(bodyOf(fixture('stk-query-paid')).CheckoutRequestID));
    noDifferences(fixture('stk-query-paid'), 'request', sent('stk-query-paid')[0]);
    assert.deepEqual(status, {
      state: 'final',
      resultCode: '0',
      resultDesc: 'The service request is processed successfully.',
    });
  });

  it('stk-query-processing: HTTP 500 500.001.1001 "being processed" is pending, not a failure', async () => {
    const client = await clientFor('stk-query-processing');
    const status = await client.stkQuery(String(bodyOf(fixture('stk-query-processing')).CheckoutRequestID));
    noDifferences(fixture('stk-query-processing'), 'request', sent('stk-query-processing')[0]);
    assert.deepEqual(status, { state: 'pending' });
  });

  it('b2c-v3: our OriginatorConversationID, and a SecurityCredential that decrypts to the initiator password, new each time', async () => {
    const client = await clientFor('b2c-v3');
    const body = bodyOf(fixture('b2c-v3'));
    const payout = () =>
      client.b2c({
        originatorConversationId: String(body.OriginatorConversationID),
        amount: 10,
        phone: '+254728762287',
        resultUrl: 'https://mydomain.com/b2c/result',
        queueTimeoutUrl: 'https://mydomain.com/b2c/queue',
        remarks: 'here are my remarks',
        occasion: 'Christmas',
        commandId: 'BusinessPayment',
      });
    const accepted = await payout();
    await payout();
    const requests = sent('b2c-v3');
    for (const request of requests) noDifferences(fixture('b2c-v3'), 'request', request);
    const credentials = requests.map((r) => String((r.body as Body).SecurityCredential));
    assert.deepEqual(credentials.map(keys.decrypt), [CONTRACT.initiatorPassword, CONTRACT.initiatorPassword]);
    assert.notEqual(credentials[0], credentials[1], 'PKCS#1 v1.5 padding is random');
    assert.deepEqual(accepted, {
      conversationId: (fixture('b2c-v3').answer.body as Body).ConversationID,
      originatorConversationId: body.OriginatorConversationID,
      responseCode: '0',
    });
  });

  it('transaction-status: by OriginalConversationID, PartyA the B2C shortcode, IdentifierType 4; accepted means asked, not answered', async () => {
    const client = await clientFor('transaction-status');
    const body = bodyOf(fixture('transaction-status'));
    const accepted = await client.transactionStatus({
      originalConversationId: String(body.OriginalConversationID),
      resultUrl: String(body.ResultURL),
      queueTimeoutUrl: String(body.QueueTimeOutURL),
      remarks: 'OK',
      occasion: 'OK',
    });
    const [request] = sent('transaction-status');
    noDifferences(fixture('transaction-status'), 'request', request);
    assert.equal(keys.decrypt(String((request!.body as Body).SecurityCredential)), CONTRACT.initiatorPassword);
    const answer = fixture('transaction-status').answer.body as Body;
    assert.deepEqual(accepted, {
      conversationId: answer.ConversationID,
      originatorConversationId: answer.OriginatorConversationID,
      responseCode: '0',
    });
  });

  it('a certificate that is not one is refused when the client is made, not at the first payout', () => {
    assert.throws(
      () => createMobileMoneyClient({ ...CONTRACT, certificate: 'not a certificate', baseUrl: 'http://127.0.0.1:1' }),
      /not an X\.509 certificate/,
    );
    assert.throws(() => securityCredentials(keys.certificate, ''), /must not be empty/);
  });
});

describe('unit: contract: our mobile-money callback parser reads the documented callbacks', () => {
  it('stk-callback-paid: metadata read by Name (Balance has no Value)', () => {
    assert.deepEqual(parseStkCallback(bodyOf(fixture('stk-callback-paid'))), {
      merchantRequestId: '19465-780693-1',
      checkoutRequestId: 'ws_CO_27072017154747416',
      resultCode: '0',
      resultDesc: 'The service request is processed successfully.',
      metadata: { amount: 1, receipt: 'LGR7OWQX0R', transactionDate: '20170727154800', phone: '254721566839' },
    });
  });

  it('stk-callback-cancelled: 1032 without CallbackMetadata', () => {
    const callback = parseStkCallback(bodyOf(fixture('stk-callback-cancelled')));
    assert.equal(callback.resultCode, '1032');
    assert.equal(callback.metadata, undefined);
  });

  it('b2c-result-success: ResultParameters read by Key, ReferenceItem as one object', () => {
    const result = parseB2cResult(bodyOf(fixture('b2c-result-success')));
    assert.equal(result.resultType, 0);
    assert.equal(result.resultCode, '0');
    assert.equal(result.originatorConversationId, '10571-7910404-1');
    assert.equal(result.transactionId, 'NLJ41HAY6Q');
    assert.equal(result.parameters.TransactionAmount, 10);
    assert.equal(result.parameters.TransactionReceipt, 'NLJ41HAY6Q');
    assert.equal(result.parameters.ReceiverPartyPublicName, '254708374149 - John Doe');
    assert.equal(result.parameters.TransactionCompletedDateTime, '19.12.2019 11:45:50');
    assert.equal(result.parameters.B2CChargesPaidAccountAvailableFunds, -4510);
    assert.match(String(result.referenceData.QueueTimeoutURL), /^https:/);
  });

  it('b2c-result-failure: 2001 (initiator information invalid) with no ResultParameters', () => {
    const result = parseB2cResult(bodyOf(fixture('b2c-result-failure')));
    assert.equal(result.resultCode, '2001');
    assert.equal(result.resultDesc, 'The initiator information is invalid.');
    assert.deepEqual(result.parameters, {});
  });

  it('b2c-queue-timeout: the Result envelope, a non-zero ResultCode', () => {
    const result = parseB2cResult(bodyOf(fixture('b2c-queue-timeout')));
    assert.equal(result.resultType, 1);
    assert.notEqual(result.resultCode, '0');
  });

  it("transaction-status-result-completed: the query's ids at the top, the payout's facts by Key (TransactionReason without Value)", () => {
    assert.deepEqual(parseTransactionStatusResult(bodyOf(fixture('transaction-status-result-completed'))), {
      resultCode: '0',
      resultDesc: 'The service request is processed successfully.',
      queryOriginatorConversationId: '3213-416199-2',
      queryConversationId: 'AG_20180223_0000493344ae97d86f75',
      transaction: {
        status: 'Completed',
        originatorConversationId: '3211-416020-3',
        conversationId: 'AG_20180223_000041b09c22e613d6c9',
        receipt: 'MBN31H462N',
        amount: '300',
        creditParty: '254708374149 - John Doe',
        finalisedTime: '20180223054112',
      },
    });
  });

  it('transaction-status-result-not-found: 2032 with no ResultParameters (*assumed*)', () => {
    const result = parseTransactionStatusResult(bodyOf(fixture('transaction-status-result-not-found')));
    assert.deepEqual([result.resultCode, result.transaction], ['2032', undefined]);
  });
});

describe('unit: contract: the mobile-money simulator accepts the documented requests and answers as documented', () => {
  let sim: RunningMobileMoneySimulator;
  let receiver: FakeProvider;
  let bearer: string;
  const callbackFixtures = [
    'stk-callback-paid',
    'stk-callback-cancelled',
    'b2c-result-success',
    'b2c-result-failure',
    'b2c-queue-timeout',
    'transaction-status-result-completed',
    'transaction-status-result-not-found',
  ];

  before(async () => {
    sim = await startMobileMoneySimulator({ ...CONTRACT, callbackDelayMs: 0 });
    // Stands in for our callback routes: answers each callback as the fixture says we do.
    receiver = await startFakeProvider(callbackFixtures.map(fixture));
    bearer = String((await send(fixture('oauth'))).body.access_token);
  });
  after(async () => {
    await Promise.all([sim.close(), receiver.close()]);
  });
  // 'lose' keeps the documented sample URLs (mydomain.com) from being called; callback tests set 'normal'.
  beforeEach(() => sim.control.setMode({ callbacks: 'lose' }));
  afterEach(() => sim.control.reset());

  /**
   * Sends a fixture's request, its variable leaves given values of our own (still matching the
   * fixture, unless `asIs` is false: a request built from it to drive a callback).
   */
  async function send(exchange: Exchange, body: Body = {}, asIs = true) {
    const bearing = exchange.call !== 'oauth';
    const request = {
      ...exchange.request,
      headers: { ...exchange.request.headers, ...(bearing ? { authorization: `Bearer ${bearer}` } : {}) },
      ...(exchange.request.body !== undefined && { body: { ...bodyOf(exchange), ...body } }),
    };
    if (asIs) noDifferences(exchange, 'request', request);
    const response = await fetch(`${sim.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
    });
    return { status: response.status, body: (await response.json()) as Body };
  }
  const credential = (password = CONTRACT.initiatorPassword) => securityCredentials(sim.certificate, password)();
  const pushed = async () => String((await send(fixture('stk-push'))).body.CheckoutRequestID);

  it('oauth: the documented Basic request gets a token whose expires_in is a string', async () => {
    noDifferences(fixture('oauth'), 'answer', await send(fixture('oauth')));
  });

  it('stk-push: the documented request (numbers where the sample has numbers) is accepted as documented', async () => {
    noDifferences(fixture('stk-push'), 'answer', await send(fixture('stk-push')));
  });

  it('stk-query-paid: the documented query of a paid push answers ResultCode "0" (a string)', async () => {
    const checkoutRequestId = await pushed();
    noDifferences(
      fixture('stk-query-paid'),
      'answer',
      await send(fixture('stk-query-paid'), { CheckoutRequestID: checkoutRequestId }),
    );
  });

  it('stk-query-processing: while the push is undecided the query answers HTTP 500 500.001.1001', async () => {
    sim.control.setMode({ processingQueries: 1 });
    const checkoutRequestId = await pushed();
    noDifferences(
      fixture('stk-query-processing'),
      'answer',
      await send(fixture('stk-query-processing'), { CheckoutRequestID: checkoutRequestId }),
    );
  });

  it('b2c-v3: accepted with our OriginatorConversationID echoed; the credential decrypted, not compared', async () => {
    noDifferences(fixture('b2c-v3'), 'answer', await send(fixture('b2c-v3'), { SecurityCredential: credential() }));
    const [payment] = sim.control.payments();
    assert.equal(payment?.api, 'v3');
    assert.equal(payment?.initiatorValid, true);
    assert.equal(payment?.occasion, 'Christmas');
  });

  it('b2c-v1: the legacy path without OriginatorConversationID gets one made by the provider; Occassion is read', async () => {
    const answer = await send(fixture('b2c-v1'), { SecurityCredential: credential() });
    noDifferences(fixture('b2c-v1'), 'answer', answer);
    const [payment] = sim.control.payments();
    assert.equal(payment?.api, 'v1');
    assert.equal(payment?.originatorConversationId, answer.body.OriginatorConversationID);
    assert.equal(payment?.occasion, 'Christmas');
  });

  it('transaction-status: the documented query is accepted, answered with ids of its own', async () => {
    sim.control.setMode({ statusResultsLost: 1 }); // the sample's ResultURL is not called
    const answer = await send(fixture('transaction-status'), { SecurityCredential: credential() });
    noDifferences(fixture('transaction-status'), 'answer', answer);
    const [query] = sim.control.statusQueries();
    assert.equal(query?.originalConversationId, bodyOf(fixture('transaction-status')).OriginalConversationID);
    assert.equal(query?.initiatorValid, true);
  });

  describe('callbacks, as documented, to a receiver answering as our routes do', () => {
    beforeEach(() => sim.control.setMode({ callbacks: 'normal' }));

    /** The one callback the receiver got for `call`, checked against its fixture, and what the simulator heard back. */
    async function received(call: string) {
      const expected = fixture(call);
      for (const deadline = Date.now() + 2_000; Date.now() < deadline;) {
        const [request, ...more] = receiver.requestsFor(expected);
        const sent = request && sim.control.callbacks().find((c) => new URL(c.url).pathname === request.path);
        // The receiver has the request a moment before the simulator has its answer.
        if (request && (sent?.status !== undefined || Date.now() + 20 >= deadline)) {
          assert.equal(more.length, 0, call);
          noDifferences(expected, 'request', { ...asRequest(request), path: expected.request.path });
          assert.equal(sent?.status, expected.answer.status, 'the simulator heard our answer');
          receiver.requests.length = 0;
          return request;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.fail(`no ${call} callback`);
    }
    const callbackUrl = (call: string) =>
      `${receiver.url}${fixture(call)
        .request.path.replace('{id}', randomUUID())
        .replace('{token}', randomBytes(12).toString('hex'))}`;
    const push = (call: string, phone: string) =>
      send(fixture('stk-push'), { PartyA: phone, PhoneNumber: phone, CallBackURL: callbackUrl(call) }, false);
    const payout = (call: string, phone: string, password?: string) => {
      const url = callbackUrl(call);
      return send(
        fixture('b2c-v3'),
        {
          OriginatorConversationID: randomUUID(),
          SecurityCredential: credential(password),
          PartyB: phone,
          ResultURL: url,
          QueueTimeOutURL: url,
        },
        false,
      );
    };

    it('stk-callback-paid: CallbackMetadata with Amount, receipt, Balance without Value, TransactionDate, PhoneNumber', async () => {
      await push('stk-callback-paid', '254721566839');
      await received('stk-callback-paid');
    });

    it('stk-callback-cancelled: ResultCode 1032 without CallbackMetadata', async () => {
      await push('stk-callback-cancelled', '254721566831');
      await received('stk-callback-cancelled');
    });

    it('b2c-result-success: the Result with its ResultParameters', async () => {
      await payout('b2c-result-success', '254708374149');
      await received('b2c-result-success');
    });

    it('b2c-result-failure: a SecurityCredential of another password is accepted, then the Result is 2001', async () => {
      const accepted = await payout('b2c-result-failure', '254708374149', 'not-the-initiator-password');
      assert.equal(accepted.status, 200, 'no synchronous refusal');
      await received('b2c-result-failure');
    });

    it('b2c-queue-timeout: the Result envelope at QueueTimeOutURL', async () => {
      await payout('b2c-queue-timeout', '254708374147');
      await received('b2c-queue-timeout');
    });

    /** A status query about `originalConversationId`, its Result sent to the receiver as `call`. */
    const askStatus = (call: string, originalConversationId: string) => {
      const url = callbackUrl(call);
      return send(
        fixture('transaction-status'),
        {
          SecurityCredential: credential(),
          OriginalConversationID: originalConversationId,
          ResultURL: url,
          QueueTimeOutURL: url,
          Occasion: undefined, // the sample's Result echoes none
        },
        false,
      );
    };

    it('transaction-status-result-completed: a paid payout whose result was lost, reported Completed', async () => {
      sim.control.setMode({ callbacks: 'lose' });
      await payout('transaction-status-result-completed', '254708374149');
      const [payment] = sim.control.payments();
      await askStatus('transaction-status-result-completed', payment!.originatorConversationId);
      const request = await received('transaction-status-result-completed');
      const parameters = (request.body as { Result: { ResultParameters: { ResultParameter: { Value?: unknown }[] } } })
        .Result.ResultParameters.ResultParameter;
      assert.equal(parameters[12]?.Value, payment!.transactionId, 'its receipt');
    });

    it('transaction-status-result-not-found: a payout the provider never had', async () => {
      await askStatus('transaction-status-result-not-found', randomUUID());
      await received('transaction-status-result-not-found');
    });
  });
});

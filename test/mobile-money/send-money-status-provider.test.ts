import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  MalformedCallbackError,
  parseTransactionStatusResult,
  type TransactionStatusResult,
} from '../../providers/mobile-money/callbacks';
import { createMobileMoneyClient } from '../../providers/mobile-money/client';
import { type MobileMoneyClient, MobileMoneyError } from '../../providers/mobile-money/protocol';
import { type RunningMobileMoneySimulator, startMobileMoneySimulator } from '../../simulators/mobile-money';
import { startCallbackReceiver } from '../support/receiver';

/**
 * The Transaction Status query that send-money asks about a payout (providers/mobile-money/protocol.ts,
 * "Transaction Status"). Our client runs against the simulator over HTTP, and a small server
 * stands in for our callback routes. The simulator answers "accepted", then reports the payout's
 * true state by callback, and it refuses what the provider refuses. No database or Temporal server
 * is involved.
 */
const CREDENTIALS = {
  consumerKey: 'status-test-key',
  consumerSecret: 'status-test-secret-not-real',
  shortCode: '174379',
  passkey: 'status-test-passkey-not-real',
  initiatorName: 'status-test-initiator',
  initiatorPassword: 'status-test-initiator-password-not-real',
};
const PHONE = (lastDigit: number) => `+25471234567${lastDigit}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('protocol: the Transaction Status query about a payout, client against simulator', () => {
  const received: { path: string; body: unknown }[] = [];
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let sim: RunningMobileMoneySimulator;
  let client: MobileMoneyClient;

  before(async () => {
    receiver = await startCallbackReceiver(received);
    sim = await startMobileMoneySimulator({ ...CREDENTIALS, callbackDelayMs: 30 });
    client = createMobileMoneyClient({
      ...CREDENTIALS,
      certificate: sim.certificate,
      baseUrl: sim.url,
      timeoutMs: 3_000,
    });
  });
  after(async () => {
    await sim.close();
    receiver.close();
  });
  afterEach(() => {
    sim.control.reset();
    received.length = 0;
  });

  /** A payout whose result is lost ('lose' decides it at once and sends nothing). */
  async function lostPayout(lastDigit: number) {
    sim.control.setMode({ callbacks: 'lose' });
    return payout(lastDigit);
  }
  async function payout(lastDigit: number) {
    const id = randomUUID();
    await client.b2c({
      originatorConversationId: id,
      amount: 250,
      phone: PHONE(lastDigit),
      resultUrl: `${receiver.url}/b2c/result/${id}`,
      queueTimeoutUrl: `${receiver.url}/b2c/timeout/${id}`,
      remarks: 'Payout',
    });
    return id;
  }
  /** Asks about `about` (an OriginatorConversationID, or a receipt); the Result's path is the query's own. */
  async function ask(about: { originalConversationId?: string; receipt?: string }, asker = client) {
    const path = `/status/${randomBytes(8).toString('hex')}`;
    const accepted = await asker.transactionStatus({
      ...about,
      resultUrl: `${receiver.url}${path}/result`,
      queueTimeoutUrl: `${receiver.url}${path}/timeout`,
      remarks: 'Status of a payout',
    });
    return { accepted, path: `${path}/result` };
  }
  async function statusAt(path: string): Promise<TransactionStatusResult> {
    for (const deadline = Date.now() + 2_000; Date.now() < deadline; await sleep(10)) {
      const hit = received.find((r) => r.path === path);
      if (hit) return parseTransactionStatusResult(hit.body);
    }
    throw new Error(`no status result at ${path}`);
  }

  it('a paid payout whose result was lost: accepted (the query’s own ids), then Completed with the receipt, amount, recipient and the payout’s ids', async () => {
    const id = await lostPayout(0);
    const { accepted, path } = await ask({ originalConversationId: id });
    assert.equal(accepted.responseCode, '0');
    assert.match(accepted.conversationId, /^AG_\d{8}_[0-9a-f]{20}$/);
    assert.notEqual(accepted.originatorConversationId, id, "the query's own id, not the payout's");
    const status = await statusAt(path);
    const [payment] = sim.control.payments();
    assert.equal(status.resultCode, '0');
    assert.equal(status.queryConversationId, accepted.conversationId);
    assert.equal(status.queryOriginatorConversationId, accepted.originatorConversationId);
    assert.deepEqual(
      { ...status.transaction, finalisedTime: undefined },
      {
        status: 'Completed',
        originatorConversationId: id,
        conversationId: payment!.conversationId,
        receipt: payment!.transactionId,
        amount: '250',
        creditParty: `${PHONE(0).slice(1)} - Simulated Recipient`,
        finalisedTime: undefined,
      },
    );
    assert.match(status.transaction!.finalisedTime!, /^\d{14}$/);
    const [query] = sim.control.statusQueries();
    assert.deepEqual([query!.originalConversationId, query!.answered, query!.resultsSent], [id, 'completed', 1]);
  });

  it('a declined payout reports Declined with its own code; an undecided one Initiated; one it never had, or one that timed out in its queue, 2032 (not found)', async () => {
    const declined = await lostPayout(8);
    const timedOut = await lostPayout(7);
    sim.control.setMode({ callbacks: 'normal', callbackDelayMs: 60_000 });
    const undecided = await payout(0);
    sim.control.setMode({ callbackDelayMs: 30 });
    const asked = await Promise.all(
      [declined, undecided, timedOut, randomUUID()].map((id) => ask({ originalConversationId: id })),
    );
    const [d, u, t, unknown] = await Promise.all(asked.map(({ path }) => statusAt(path)));
    assert.deepEqual(
      [d!.transaction?.status, d!.transaction?.reasonCode, d!.transaction?.reason, d!.transaction?.receipt],
      [
        'Declined',
        '2040',
        sim.control.payments().find((p) => p.originatorConversationId === declined)!.resultDesc,
        undefined,
      ],
    );
    assert.equal(u!.transaction?.status, 'Initiated');
    for (const notFound of [t!, unknown!]) {
      assert.deepEqual([notFound.resultCode, notFound.transaction], ['2032', undefined]);
      assert.equal(notFound.resultDesc, 'The transaction receipt number does not exist.');
    }
  });

  it('by receipt (TransactionID) as well, the only way mpesa-node and mpesa-api ask', async () => {
    const id = await lostPayout(0);
    const [payment] = sim.control.payments();
    const { path } = await ask({ receipt: payment!.transactionId });
    const status = await statusAt(path);
    assert.equal(status.transaction?.originatorConversationId, id);
    assert.equal(status.transaction?.status, 'Completed');
  });

  it('a SecurityCredential that is not the initiator password is accepted, then the Result is 2001: the query failed, nothing said of the payout', async () => {
    const id = await lostPayout(0);
    const wrong = createMobileMoneyClient({
      ...CREDENTIALS,
      initiatorPassword: 'not-the-password',
      certificate: sim.certificate,
      baseUrl: sim.url,
    });
    const { accepted, path } = await ask({ originalConversationId: id }, wrong);
    assert.equal(accepted.responseCode, '0', 'no synchronous refusal');
    const status = await statusAt(path);
    assert.deepEqual([status.resultCode, status.transaction], ['2001', undefined]);
  });

  it('refuses what the provider refuses (400.002.02 naming the field, 404.001.03 without a token); the client reads refusals as it does for B2C', async () => {
    const token = await client.accessToken();
    const valid = {
      Initiator: CREDENTIALS.initiatorName,
      SecurityCredential: 'c2VjcmV0',
      CommandID: 'TransactionStatusQuery',
      OriginalConversationID: randomUUID(),
      PartyA: CREDENTIALS.shortCode,
      IdentifierType: '4',
      ResultURL: `${receiver.url}/status/x/result`,
      QueueTimeOutURL: `${receiver.url}/status/x/timeout`,
      Remarks: 'Status',
    };
    const post = async (body: unknown, bearer = token) => {
      const response = await fetch(`${sim.url}/mpesa/transactionstatus/v1/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, string> };
    };
    sim.control.setMode({ statusResultsLost: 100 });
    assert.equal((await post(valid)).status, 200);
    const refusals: [Record<string, unknown>, string][] = [
      [{ CommandID: 'TransactionStatus' }, 'CommandID'],
      [{ OriginalConversationID: undefined }, 'TransactionID'],
      [{ Initiator: '' }, 'Initiator'],
      [{ PartyA: '600000' }, 'PartyA'],
      [{ IdentifierType: '1' }, 'IdentifierType'],
      [{ ResultURL: 'not a url' }, 'ResultURL'],
      [{ QueueTimeOutURL: undefined }, 'QueueTimeOutURL'],
      [{ Remarks: 'x'.repeat(101) }, 'Remarks'],
      [{ Occasion: 'x'.repeat(101) }, 'Occasion'],
    ];
    for (const [change, field] of refusals) {
      const answer = await post({ ...valid, ...change });
      assert.deepEqual(
        [answer.status, answer.body.errorCode, answer.body.errorMessage],
        [400, '400.002.02', `Bad Request - Invalid ${field}`],
        field,
      );
    }
    const unauthorised = await post(valid, 'not-a-token');
    assert.deepEqual([unauthorised.status, unauthorised.body.errorCode], [404, '404.001.03']);
    assert.equal(sim.control.statusQueries().length, 1, 'only the valid query was taken');

    await assert.rejects(
      client.transactionStatus({ resultUrl: valid.ResultURL, queueTimeoutUrl: valid.QueueTimeOutURL, remarks: 'x' }),
      RangeError,
    );
    const refused = await client
      .transactionStatus({ originalConversationId: 'x', resultUrl: 'nope', queueTimeoutUrl: 'nope', remarks: 'Status' })
      .catch((error: unknown) => error);
    assert.ok(refused instanceof MobileMoneyError);
    assert.deepEqual(
      [refused.operation, refused.httpStatus, refused.errorCode, refused.indeterminate],
      ['transactionStatus', 400, '400.002.02', false],
    );
    // An invalid token is refreshed once, as for every call.
    sim.control.revokeTokens();
    assert.equal((await ask({ originalConversationId: randomUUID() })).accepted.responseCode, '0');
  });

  it('status results are spared by callbacks: lose; statusResultsLost loses the next N (recorded lost), then they come again', async () => {
    const id = await lostPayout(0);
    sim.control.setMode({ statusResultsLost: 1 });
    const first = await ask({ originalConversationId: id });
    const second = await ask({ originalConversationId: id });
    await statusAt(second.path);
    await sleep(50);
    assert.equal(received.filter((r) => r.path === first.path).length, 0, 'the first result was lost');
    const sent = sim.control.callbacks().filter((c) => c.kind === 'b2c_status');
    assert.deepEqual(
      sent.map((c) => [c.id, Boolean(c.lost)]),
      [
        [id, true],
        [id, false],
      ],
    );
    assert.equal(sim.control.payments()[0]!.callbacksSent, 0, "status results are the query's, not the payout's");
  });

  it('the parser reads the provider’s own samples (spaced keys, DebitPartyName twice) and refuses malformed bodies', () => {
    // The current reference page's sample: the customer listed as a second DebitPartyName.
    const page = parseTransactionStatusResult({
      Result: {
        ConversationID: 'AG_20180223_0000493344ae97d86f75',
        OriginatorConversationID: '3213-416199-2',
        ReferenceData: { ReferenceItem: { Key: 'Occasion' } },
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        ResultParameters: {
          ResultParameter: [
            { Key: 'DebitPartyName', Value: '600310 - Safaricom333' },
            { Key: 'DebitPartyName', Value: '254708374149 - John Doe' },
            { Key: 'OriginatorConversationID', Value: '3211-416020-3' },
            { Key: 'TransactionReason' },
            { Key: 'TransactionStatus', Value: 'Completed' },
            { Key: 'FinalisedTime', Value: '20180223054112' },
            { Key: 'Amount', Value: '300' },
            { Key: 'ConversationID', Value: 'AG_20180223_000041b09c22e613d6c9' },
            { Key: 'ReceiptNo', Value: 'MBN31H462N' },
          ],
        },
        ResultType: 0,
        TransactionID: 'MBN0000000',
      },
    });
    assert.equal(page.transaction?.creditParty, '254708374149 - John Doe');
    assert.equal(page.transaction?.receipt, 'MBN31H462N');
    // The v1-era sample: spaced keys, numbers for Amount and FinalisedTime, CreditPartyName.
    const v1 = parseTransactionStatusResult({
      Result: {
        ResultType: 0,
        ResultCode: 0,
        ResultDesc: 'The service request has been accepted successfully.',
        OriginatorConversationID: '10816-694520-2',
        ConversationID: 'AG_20170727_000059c52529a8e080bd',
        TransactionID: 'LGR0000000',
        ResultParameters: {
          ResultParameter: [
            { Key: 'ReceiptNo', Value: 'LGR919G2AV' },
            { Key: 'Conversation ID', Value: 'AG_20170727_00004492b1b6d0078fbe' },
            { Key: 'FinalisedTime', Value: 20170727101415 },
            { Key: 'Amount', Value: 10 },
            { Key: 'TransactionStatus', Value: 'Completed' },
            { Key: 'Originator Conversation ID', Value: '19455-773836-1' },
            { Key: 'CreditPartyName', Value: '254708374149 - John Doe' },
            { Key: 'DebitPartyName', Value: '600134 - Safaricom157' },
          ],
        },
        ReferenceData: { ReferenceItem: { Key: 'Occasion', Value: 'aaaa' } },
      },
    });
    assert.deepEqual(v1.transaction, {
      status: 'Completed',
      originatorConversationId: '19455-773836-1',
      conversationId: 'AG_20170727_00004492b1b6d0078fbe',
      receipt: 'LGR919G2AV',
      amount: 10,
      creditParty: '254708374149 - John Doe',
      finalisedTime: '20170727101415',
    });
    for (const body of [{}, { Result: { ResultCode: 0 } }, 'not json', { Result: { ResultCode: 0, ResultDesc: '' } }])
      assert.throws(() => parseTransactionStatusResult(body), MalformedCallbackError);
  });
});

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { selfSignedCertificate } from '../../simulators/certificates';
import { parseB2cResult } from '../../providers/mobile-money/callbacks';
import { createMobileMoneyClient } from '../../providers/mobile-money/client';
import type { MobileMoneyClientOptions } from '../../providers/mobile-money/protocol';
import { securityCredentials } from '../../providers/mobile-money/security-credential';
import { type RunningMobileMoneySimulator, startMobileMoneySimulator } from '../../simulators/mobile-money';
import { differences, exchange, loadExchanges } from '../contracts/contract';
import { harness } from '../support/harness';
import { startCallbackReceiver } from '../support/receiver';
import {
  fundedCustomer,
  insertStkPushTransaction,
  newCustomer,
  payerNumber,
  paymentsTo,
  postCallback,
  sendAccepted,
  settled,
} from '../support/money';

/**
 * The mobile-money provider's protocol rules (protocols/mobile-money.md) that community clients
 * rely on and our own client must meet in production: both B2C paths, the encrypted
 * SecurityCredential, both Occasion spellings, OAuth tokens that stay valid until they expire.
 * Over HTTP against a simulator of this file's own, and through the service for the parts it
 * plays (its payouts' credential, its answers to the documented callbacks).
 */
const CREDENTIALS = {
  consumerKey: 'protocol-key',
  consumerSecret: 'protocol-secret-not-real',
  shortCode: '174379',
  passkey: 'protocol-passkey-not-real',
  initiatorName: 'protocol-initiator',
  initiatorPassword: 'protocol-initiator-password-not-real',
};
const phone = (lastDigit: number) => `25471234567${lastDigit}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('protocol: mobile-money provider rules community clients rely on (B2C paths, SecurityCredential, tokens)', () => {
  const received: { path: string; body: unknown }[] = [];
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let hook = '';
  let sim: RunningMobileMoneySimulator;

  before(async () => {
    receiver = await startCallbackReceiver(received);
    hook = receiver.url;
    sim = await startMobileMoneySimulator({ ...CREDENTIALS, callbackDelayMs: 20 });
  });
  after(async () => {
    await sim.close();
    receiver.close();
  });
  afterEach(() => sim.control.reset());

  const clientOptions = (): MobileMoneyClientOptions => ({
    ...CREDENTIALS,
    certificate: sim.certificate,
    baseUrl: sim.url,
    timeoutMs: 3_000,
  });
  const token = () => createMobileMoneyClient(clientOptions()).accessToken();
  /** A provider call as a community client makes it: its own JSON, our token. */
  const post = async (path: string, body: unknown, bearer?: string) => {
    const response = await fetch(`${sim.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer ?? (await token())}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  };
  const resultAt = async (path: string, ms = 2_000) => {
    for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(10)) {
      const hit = received.find((r) => r.path === path);
      if (hit) return parseB2cResult(hit.body);
    }
    throw new Error(`no callback at ${path} within ${ms} ms`);
  };
  /** A B2C body as mpesa-node / mpesa-api send it to the legacy path (no OriginatorConversationID). */
  const legacyB2c = (lastDigit: number, extra: Record<string, unknown> = {}) => {
    const id = randomUUID();
    return {
      resultPath: `/b2c/${id}/result`,
      body: {
        InitiatorName: CREDENTIALS.initiatorName,
        SecurityCredential: securityCredentials(sim.certificate, CREDENTIALS.initiatorPassword)(),
        CommandID: 'BusinessPayment',
        Amount: 100,
        PartyA: CREDENTIALS.shortCode,
        PartyB: phone(lastDigit),
        Remarks: 'Loan disbursement',
        QueueTimeOutURL: `${hook}/b2c/${id}/timeout`,
        ResultURL: `${hook}/b2c/${id}/result`,
        ...extra,
      },
    };
  };

  describe('B2C at both paths', () => {
    it('legacy v1 (/mpesa/b2c/v1/paymentrequest): no OriginatorConversationID sent; the provider makes one, answers it and uses it in the Result', async () => {
      const { body, resultPath } = legacyB2c(0);
      const answer = await post('/mpesa/b2c/v1/paymentrequest', body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.ResponseCode, '0');
      assert.match(answer.body.OriginatorConversationID!, /^\d{5}-\d{8}-1$/, 'like 16740-34861180-1');
      const result = await resultAt(resultPath);
      assert.equal(result.resultCode, '0');
      assert.equal(result.originatorConversationId, answer.body.OriginatorConversationID);
      assert.equal(result.conversationId, answer.body.ConversationID);
      assert.equal(sim.control.payments()[0]?.api, 'v1');
    });

    it('legacy v1: an OriginatorConversationID sent anyway is not the one used (the provider makes its own)', async () => {
      const { body } = legacyB2c(0, { OriginatorConversationID: 'caller-made-id' });
      const answer = await post('/mpesa/b2c/v1/paymentrequest', body);
      assert.equal(answer.status, 200);
      assert.notEqual(answer.body.OriginatorConversationID, 'caller-made-id');
    });

    it('current v3: the OriginatorConversationID is required (400.002.02) and echoed; our client uses v3', async () => {
      const { body } = legacyB2c(0);
      const missing = await post('/mpesa/b2c/v3/paymentrequest', body);
      assert.equal(missing.status, 400);
      assert.equal(missing.body.errorCode, '400.002.02');
      assert.equal(missing.body.errorMessage, 'Bad Request - Invalid OriginatorConversationID');
      const id = randomUUID();
      const accepted = await createMobileMoneyClient(clientOptions()).b2c({
        originatorConversationId: id,
        amount: 100,
        phone: `+${phone(0)}`,
        resultUrl: `${hook}/b2c/${id}/result`,
        queueTimeoutUrl: `${hook}/b2c/${id}/timeout`,
        remarks: 'Loan disbursement',
      });
      assert.equal(accepted.originatorConversationId, id);
      assert.equal((await resultAt(`/b2c/${id}/result`)).originatorConversationId, id);
      assert.equal(sim.control.payments()[0]?.api, 'v3');
    });

    it("Occasion and the samples' Occassion are both accepted and recorded, on both paths; an over-long one is refused naming the field as sent", async () => {
      for (const [path, field] of [
        ['/mpesa/b2c/v1/paymentrequest', 'Occasion'],
        ['/mpesa/b2c/v1/paymentrequest', 'Occassion'],
        ['/mpesa/b2c/v3/paymentrequest', 'Occasion'],
        ['/mpesa/b2c/v3/paymentrequest', 'Occassion'],
      ] as const) {
        const { body } = legacyB2c(0, { OriginatorConversationID: randomUUID(), [field]: `${field} on ${path}` });
        const answer = await post(path, body);
        assert.equal(answer.status, 200, `${field} on ${path}: ${JSON.stringify(answer.body)}`);
        const payment = sim.control
          .payments()
          .find((p) => p.originatorConversationId === answer.body.OriginatorConversationID);
        assert.equal(payment?.occasion, `${field} on ${path}`);
      }
      const tooLong = await post('/mpesa/b2c/v1/paymentrequest', legacyB2c(0, { Occassion: 'x'.repeat(101) }).body);
      assert.equal(tooLong.status, 400);
      assert.equal(tooLong.body.errorMessage, 'Bad Request - Invalid Occassion');
    });
  });

  describe('SecurityCredential: the initiator password RSA-encrypted (PKCS#1 v1.5) with the provider certificate', () => {
    it('the certificate is published (GET /_control/certificate), and a client that encrypts with it is paid', async () => {
      const response = await fetch(`${sim.url}/_control/certificate`);
      const pem = await response.text();
      assert.equal(response.status, 200);
      assert.match(pem, /^-----BEGIN CERTIFICATE-----/);
      assert.equal(pem, sim.certificate);
      const { body, resultPath } = legacyB2c(0, {
        SecurityCredential: securityCredentials(pem, CREDENTIALS.initiatorPassword)(),
      });
      assert.equal((await post('/mpesa/b2c/v1/paymentrequest', body)).status, 200);
      assert.equal((await resultAt(resultPath)).resultCode, '0');
      assert.equal(sim.control.payments()[0]?.initiatorValid, true);
    });

    it('a wrong password, another certificate or a value that is no ciphertext: accepted (no synchronous error), then Result 2001 "The initiator information is invalid."', async () => {
      const otherCertificate = selfSignedCertificate({ commonName: 'not the provider' }).cert;
      const wrong = {
        'another password': securityCredentials(sim.certificate, 'not-the-password')(),
        'another certificate': securityCredentials(otherCertificate, CREDENTIALS.initiatorPassword)(),
        'the password in clear': Buffer.from(CREDENTIALS.initiatorPassword).toString('base64'),
        'the old fixed string': 'dev-security-credential-not-a-secret',
      };
      for (const [what, SecurityCredential] of Object.entries(wrong)) {
        const { body, resultPath } = legacyB2c(0, { SecurityCredential });
        const answer = await post('/mpesa/b2c/v1/paymentrequest', body);
        assert.equal(answer.status, 200, `${what}: accepted`);
        const result = await resultAt(resultPath);
        assert.equal(result.resultCode, '2001', what);
        assert.equal(result.resultDesc, 'The initiator information is invalid.', what);
        assert.deepEqual(result.parameters, {}, `${what}: nothing paid`);
      }
    });

    it('our client configured with a wrong password gets its payout accepted, then Result 2001', async () => {
      const client = createMobileMoneyClient({ ...clientOptions(), initiatorPassword: 'not-the-password' });
      const id = randomUUID();
      await client.b2c({
        originatorConversationId: id,
        amount: 100,
        phone: `+${phone(0)}`,
        resultUrl: `${hook}/b2c/${id}/result`,
        queueTimeoutUrl: `${hook}/b2c/${id}/timeout`,
        remarks: 'Loan disbursement',
      });
      assert.equal((await resultAt(`/b2c/${id}/result`)).resultCode, '2001');
    });
  });

  describe('OAuth tokens', () => {
    it('a token stays valid until it expires, however many are issued after it (no eviction by count)', async () => {
      const first = await token();
      for (let i = 0; i < 150; i++) await token();
      // An empty query body: refused for its fields (400), not for the token (404.001.03).
      const answer = await post('/mpesa/stkpushquery/v1/query', {}, first);
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
      assert.equal(answer.body.errorCode, '400.002.02');
    });

    it('an expired token is refused 404.001.03 (and forgotten: memory is bounded by expiry)', async () => {
      sim.control.setMode({ tokenTtlSeconds: 1 });
      const expiring = await token();
      await sleep(1_100);
      const answer = await post('/mpesa/stkpushquery/v1/query', {}, expiring);
      assert.equal(answer.status, 404);
      assert.equal(answer.body.errorCode, '404.001.03');
    });
  });
});

describe('protocol: the service speaks the mobile-money protocol (SecurityCredential, documented callbacks)', () => {
  it('send money: the service encrypts its SecurityCredential with the simulator certificate, and the payout is paid', async () => {
    const customer = await fundedCustomer(1_000_000);
    const recipient = payerNumber(0);
    const created = await sendAccepted(customer, 100_000, recipient);
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    const [payment, ...others] = await paymentsTo(recipient);
    assert.equal(others.length, 0);
    assert.equal(payment?.initiatorValid, true, 'the credential decrypted to the initiator password');
    assert.equal(payment?.api, 'v3');
  });

  it('our callback routes read each documented callback and answer as its contract fixture says', async () => {
    const exchanges = loadExchanges('mobile-money');
    const kinds = {
      'stk-callback-paid': 'stk',
      'stk-callback-cancelled': 'stk',
      'b2c-result-success': 'b2c/result',
      'b2c-result-failure': 'b2c/result',
      'b2c-queue-timeout': 'b2c/timeout',
    } as const;
    const customer = await newCustomer(0);
    for (const [call, kind] of Object.entries(kinds)) {
      const fixture = exchange(exchanges, call);
      // Already final: the route reads the callback and answers it, and nothing moves.
      const row = await insertStkPushTransaction(customer, 10_000);
      // Each kind of callback has its own kind of transaction: a push's address takes no B2C callback.
      const type = kind === 'stk' ? 'STK_PUSH' : 'SEND_MONEY';
      await harness().db('transactions').where({ id: row.id }).update({ status: 'POSTED', type });
      const reply = await postCallback(kind, row, fixture.request.body);
      assert.deepEqual(differences(fixture, 'answer', { status: reply.status, body: reply.body }), [], call);
    }
  });
});

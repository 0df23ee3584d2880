import { strict as assert } from 'node:assert';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBankClient } from '../../providers/bank/client';
import { BankError, type OnboardingRequest } from '../../providers/bank/protocol';
import {
  type RunningBankSimulator,
  type SimulatedCustomer,
  type SimulatedMobileNumberChange,
  startBankSimulator,
} from '../../simulators/bank';

const CREDENTIALS = { clientId: 'lending-dev', clientSecret: 'dev-bank-client-secret-not-a-secret' };

const jpeg = () => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(96)]).toString('base64');
const png = () =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(96)]).toString('base64');
const sha256 = (base64: string) => createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex');

let numbers = 0;
/** An onboarding with its own reference, identity document and mobile number. */
function onboarding(overrides: { customer?: Partial<OnboardingRequest['customer']> } = {}): OnboardingRequest {
  numbers++;
  return {
    reference: randomUUID(),
    customer: {
      firstName: 'Wanjiru',
      lastName: 'Kamau',
      dateOfBirth: '1990-04-17',
      idType: 'IDENTITY_CARD',
      idNumber: String(23_000_000 + numbers),
      mobileNumber: `+2547${String(10_000_000 + numbers).padStart(8, '0')}`,
      email: 'wanjiru@example.com',
      ...overrides.customer,
    },
    documents: { idFront: jpeg(), idBack: jpeg(), selfie: png() },
  };
}

const refusal = async (promise: Promise<unknown>): Promise<BankError> => {
  const error = await promise.then(
    () => assert.fail('expected a BankError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof BankError, String(error));
  return error;
};
const classed = (error: BankError) => [
  error.details.httpStatus,
  error.details.code,
  error.details.indeterminate,
  error.details.transient,
];

describe('unit: bank client (current-account onboarding, mobile-number changes) against its simulator over HTTP', () => {
  let simulator: RunningBankSimulator;
  const control = (path: string, method = 'GET', body?: unknown) =>
    fetch(`${simulator.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const mode = async (body: Record<string, unknown>) =>
    assert.equal((await control('/mode', 'PATCH', body)).status, 200);
  const customers = async () => (await (await control('/customers')).json()) as SimulatedCustomer[];
  const client = (overrides: Partial<Parameters<typeof createBankClient>[0]> = {}) =>
    createBankClient({ baseUrl: simulator.url, ...CREDENTIALS, ...overrides });
  /** Polls a status read until it leaves PENDING (or throws). */
  async function settled<T extends { status: string }>(read: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const result = await read();
      if (result.status !== 'PENDING' || Date.now() > deadline) return result;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  /** A token of our own, for raw calls. */
  async function rawToken(): Promise<string> {
    const answer = await fetch(`${simulator.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${CREDENTIALS.clientId}:${CREDENTIALS.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    assert.equal(answer.status, 200);
    return ((await answer.json()) as { access_token: string }).access_token;
  }

  before(async () => {
    simulator = await startBankSimulator(CREDENTIALS);
  });
  afterEach(async () => {
    assert.equal((await control('/reset', 'POST')).status, 204);
  });
  after(() => simulator.close());

  it('onboarding approved: ACTIVE with the bank customer number and an account number; the bank holds what was sent', async () => {
    const request = onboarding();
    const opened = await client().onboard(request);
    assert.equal(opened.status, 'ACTIVE');
    assert.match(opened.bankCustomerId, /^CIF\d{10}$/);
    assert.match(opened.accountNumber ?? '', /^01\d{11}$/);
    const [held, ...others] = await customers();
    assert.deepEqual(others, []);
    assert.equal(held?.partnerReference, request.reference);
    assert.equal(held?.customerId, opened.bankCustomerId);
    assert.deepEqual(held?.customer, { ...request.customer, idType: '101' });
    assert.deepEqual(held?.documents, {
      frontSidePhoto: { contentType: 'image/jpeg', bytes: 100, sha256: sha256(request.documents.idFront) },
      backSidePhoto: { contentType: 'image/jpeg', bytes: 100, sha256: sha256(request.documents.idBack!) },
      selfiePhoto: { contentType: 'image/png', bytes: 104, sha256: sha256(request.documents.selfie) },
    });
    assert.deepEqual(await client().onboardingStatus(request.reference), opened);
  });

  it('a passport needs no back side; its number is the passport number (document code 103)', async () => {
    const request = onboarding({ customer: { idType: 'PASSPORT', idNumber: 'AK0123456' } });
    delete request.documents.idBack;
    assert.equal((await client().onboard(request)).status, 'ACTIVE');
    assert.deepEqual(
      (await customers()).map((c) => [c.customer.idType, Object.keys(c.documents).sort()]),
      [['103', ['frontSidePhoto', 'selfiePhoto']]],
    );
  });

  it('idempotent replay: the same Idempotency-Key with the same body answers the first result, marked replayed, and opens nothing more', async () => {
    const request = onboarding();
    const first = await client().onboard(request);
    const again = await client().onboard(request);
    assert.deepEqual(again, first);
    // Raw, to see the replay header and that the body is the first answer to the letter.
    const token = await rawToken();
    const body = {
      partnerReference: request.reference,
      customer: { ...request.customer, idType: '101' },
      documents: {
        frontSidePhoto: request.documents.idFront,
        backSidePhoto: request.documents.idBack,
        selfiePhoto: request.documents.selfie,
      },
    };
    const replay = await fetch(`${simulator.url}/v1/onboardings`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': request.reference,
      },
      // Another key order: the same payload.
      body: JSON.stringify({
        documents: body.documents,
        customer: body.customer,
        partnerReference: body.partnerReference,
      }),
    });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(((await replay.json()) as { customerId: string }).customerId, first.bankCustomerId);
    assert.equal((await customers()).length, 1);
  });

  it('the same Idempotency-Key with a different body is 409 IDEMPOTENCY_KEY_REUSED, a definite refusal that changes nothing', async () => {
    const request = onboarding();
    const first = await client().onboard(request);
    const changed = { ...request, customer: { ...request.customer, firstName: 'Njeri' } };
    const error = await refusal(client().onboard(changed));
    assert.deepEqual(classed(error), [409, 'IDEMPOTENCY_KEY_REUSED', false, false]);
    assert.equal((await customers())[0]?.customer.firstName, 'Wanjiru');
    assert.deepEqual(await client().onboardingStatus(request.reference), first);
  });

  it('pending: PENDING with the customer number and no account, then the status read finds ACTIVE with an account after the decision', async () => {
    await mode({ onboarding: 'pending', decisionDelayMs: 50 });
    const request = onboarding();
    const pending = await client().onboard(request);
    assert.deepEqual(pending, { status: 'PENDING', bankCustomerId: pending.bankCustomerId });
    assert.match(pending.bankCustomerId, /^CIF\d{10}$/);
    const active = await settled(() => client().onboardingStatus(request.reference));
    assert.equal(active.status, 'ACTIVE');
    assert.equal(active.bankCustomerId, pending.bankCustomerId);
    assert.match(active.accountNumber ?? '', /^01\d{11}$/);
  });

  it('pending then rejected: the status read is a definite refusal carrying the rejection code', async () => {
    await mode({
      onboarding: 'pending',
      decisionDelayMs: 20,
      pendingDecision: 'reject',
      onboardingRejection: 'INVALID_DOCUMENT',
    });
    const request = onboarding();
    assert.equal((await client().onboard(request)).status, 'PENDING');
    const error = await refusal(settled(() => client().onboardingStatus(request.reference)));
    assert.deepEqual(classed(error), [undefined, 'INVALID_DOCUMENT', false, false]);
  });

  it('rejected at once: definite refusals, neither indeterminate nor transient (ID_MISMATCH 422, DUPLICATE_CUSTOMER 409, NUMBER_TAKEN 409, UNDERAGE 422)', async () => {
    await mode({ onboarding: 'reject' });
    const mismatch = onboarding();
    assert.deepEqual(classed(await refusal(client().onboard(mismatch))), [422, 'ID_MISMATCH', false, false]);
    // The refusal is recorded: the status read says the same.
    assert.deepEqual(classed(await refusal(client().onboardingStatus(mismatch.reference))), [
      undefined,
      'ID_MISMATCH',
      false,
      false,
    ]);
    await mode({ onboarding: 'approve' });
    const opened = onboarding();
    await client().onboard(opened);
    const sameDocument = onboarding({ customer: { idNumber: opened.customer.idNumber } });
    assert.deepEqual(classed(await refusal(client().onboard(sameDocument))), [409, 'DUPLICATE_CUSTOMER', false, false]);
    const sameNumber = onboarding({ customer: { mobileNumber: opened.customer.mobileNumber } });
    assert.deepEqual(classed(await refusal(client().onboard(sameNumber))), [409, 'NUMBER_TAKEN', false, false]);
    const young = new Date(Date.now() - 17 * 365 * 86_400_000).toISOString().slice(0, 10);
    const minor = onboarding({ customer: { dateOfBirth: young } });
    assert.deepEqual(classed(await refusal(client().onboard(minor))), [422, 'UNDERAGE', false, false]);
    assert.deepEqual(
      (await customers()).map((c) => [c.status, c.customerId === null]),
      [
        ['REJECTED', true],
        ['ACTIVE', false],
        ['REJECTED', true],
        ['REJECTED', true],
        ['REJECTED', true],
      ],
    );
  });

  it('5xx is indeterminate and transient: the status read finds the account the bank opened, a replay answers it, and there is no second customer', async () => {
    await mode({ onboarding: 'error' });
    const request = onboarding();
    const error = await refusal(client().onboard(request));
    assert.deepEqual(classed(error), [500, 'INTERNAL_ERROR', true, true]);
    await mode({ onboarding: 'approve' });
    const found = await client().onboardingStatus(request.reference);
    assert.equal(found.status, 'ACTIVE');
    assert.deepEqual(await client().onboard(request), found, 'a resend with the same key is a replay');
    assert.deepEqual(
      (await customers()).map((c) => c.customerId),
      [found.bankCustomerId],
    );
  });

  it('no answer in time is indeterminate: the status read finds the outcome and there is no second customer', async () => {
    await mode({ onboarding: 'timeout' });
    const request = onboarding();
    const late = await refusal(client({ timeoutMs: 300 }).onboard(request));
    assert.deepEqual(classed(late), [undefined, undefined, true, true]);
    const found = await client().onboardingStatus(request.reference);
    assert.equal(found.status, 'ACTIVE');
    assert.equal((await customers()).length, 1);
  });

  it('an unreachable bank certainly did nothing (not indeterminate); 429 is transient, not indeterminate; an unknown reference reads NOT_FOUND', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    const unreachable = await refusal(client({ baseUrl: `http://127.0.0.1:${port}` }).onboard(onboarding()));
    assert.equal(unreachable.details.indeterminate, false);
    assert.equal(unreachable.details.transient, true);
    await mode({ onboarding: 'throttle' });
    const throttled = await refusal(client().onboard(onboarding()));
    assert.deepEqual(classed(throttled), [429, 'RATE_LIMITED', false, true]);
    const unknown = await refusal(client().onboardingStatus(randomUUID()));
    assert.deepEqual(classed(unknown), [404, 'NOT_FOUND', false, false]);
    assert.deepEqual(await customers(), []);
  });

  it('token: one cached token across calls; an expired token (401) is replaced once by the client and the call goes through; wrong credentials are a definite invalid_client', async () => {
    const bank = client();
    const first = await bank.onboard(onboarding());
    await bank.onboardingStatus((await customers())[0]!.partnerReference);
    assert.deepEqual(await (await control('/tokens')).json(), { issued: 1, live: 1 });
    assert.equal((await control('/tokens/expire', 'POST')).status, 204);
    const second = await bank.onboard(onboarding());
    assert.equal(second.status, 'ACTIVE');
    assert.notEqual(second.bankCustomerId, first.bankCustomerId);
    assert.deepEqual(await (await control('/tokens')).json(), { issued: 2, live: 1 });
    const wrong = await refusal(client({ clientSecret: 'another-secret' }).onboard(onboarding()));
    assert.deepEqual(classed(wrong), [401, 'invalid_client', false, false]);
    assert.equal(wrong.details.operation, 'token');
    assert.equal((await customers()).length, 2);
  });

  it('bad images refused 400 naming the fields: not base64, a data: URL, not JPEG/PNG by magic bytes; dates that are not real dates; a missing back side; nothing recorded', async () => {
    const cases: [OnboardingRequest, string[]][] = [
      [
        { ...onboarding(), documents: { idFront: 'not base64!', idBack: jpeg(), selfie: png() } },
        ['documents.frontSidePhoto'],
      ],
      [
        { ...onboarding(), documents: { idFront: jpeg(), idBack: jpeg(), selfie: `data:image/png;base64,${png()}` } },
        ['documents.selfiePhoto'],
      ],
      [
        {
          ...onboarding(),
          documents: { idFront: Buffer.from('GIF89a-not-accepted').toString('base64'), idBack: jpeg(), selfie: png() },
        },
        ['documents.frontSidePhoto'],
      ],
      [onboarding({ customer: { dateOfBirth: '1990-02-30' } }), ['customer.dateOfBirth']],
      [onboarding({ customer: { dateOfBirth: '17/04/1990' } }), ['customer.dateOfBirth']],
      [{ ...onboarding(), documents: { idFront: jpeg(), selfie: png() } }, ['documents.backSidePhoto']],
    ];
    for (const [request, fields] of cases) {
      const error = await refusal(client().onboard(request));
      assert.deepEqual(classed(error), [400, 'VALIDATION_ERROR', false, false]);
      assert.deepEqual(error.details.fields, fields);
    }
    assert.deepEqual(await customers(), []);
  });

  it('mobile number change approved (COMPLETED, the bank holds the new number); another customer’s number refused NUMBER_TAKEN; reject mode NUMBER_TAKEN', async () => {
    const a = onboarding();
    const b = onboarding();
    const customerA = (await client().onboard(a)).bankCustomerId;
    await client().onboard(b);
    const newNumber = '+254799000111';
    const change = { reference: randomUUID(), bankCustomerId: customerA, newMobileNumber: newNumber };
    assert.deepEqual(await client().changeMobileNumber(change), { status: 'COMPLETED' });
    assert.deepEqual(await client().changeMobileNumber(change), { status: 'COMPLETED' }, 'replayed');
    assert.deepEqual(await client().mobileNumberChangeStatus(change), { status: 'COMPLETED' });
    assert.equal((await customers()).find((c) => c.customerId === customerA)?.customer.mobileNumber, newNumber);

    const taken = await refusal(
      client().changeMobileNumber({
        reference: randomUUID(),
        bankCustomerId: customerA,
        newMobileNumber: b.customer.mobileNumber,
      }),
    );
    assert.deepEqual(classed(taken), [409, 'NUMBER_TAKEN', false, false]);
    await mode({ mobileChange: 'reject' });
    const refused = { reference: randomUUID(), bankCustomerId: customerA, newMobileNumber: '+254799000222' };
    assert.deepEqual(classed(await refusal(client().changeMobileNumber(refused))), [409, 'NUMBER_TAKEN', false, false]);
    assert.deepEqual(classed(await refusal(client().mobileNumberChangeStatus(refused))), [
      undefined,
      'NUMBER_TAKEN',
      false,
      false,
    ]);
    assert.equal((await customers()).find((c) => c.customerId === customerA)?.customer.mobileNumber, newNumber);
  });

  it('mobile number change pending then COMPLETED through the status read; a 5xx change is indeterminate and the status read finds it done', async () => {
    const customerId = (await client().onboard(onboarding())).bankCustomerId;
    await mode({ mobileChange: 'pending', decisionDelayMs: 30 });
    const pending = { reference: randomUUID(), bankCustomerId: customerId, newMobileNumber: '+254111000333' };
    assert.deepEqual(await client().changeMobileNumber(pending), { status: 'PENDING' });
    assert.deepEqual(await settled(() => client().mobileNumberChangeStatus(pending)), { status: 'COMPLETED' });

    await mode({ mobileChange: 'error' });
    const lost = { reference: randomUUID(), bankCustomerId: customerId, newMobileNumber: '+254111000444' };
    assert.deepEqual(classed(await refusal(client().changeMobileNumber(lost))), [500, 'INTERNAL_ERROR', true, true]);
    assert.deepEqual(await client().mobileNumberChangeStatus(lost), { status: 'COMPLETED' });
    const changes = (await (await control('/mobile-number-changes')).json()) as SimulatedMobileNumberChange[];
    assert.deepEqual(
      changes.map((c) => [c.partnerReference, c.status]),
      [
        [pending.reference, 'COMPLETED'],
        [lost.reference, 'COMPLETED'],
      ],
    );
    await mode({ mobileChange: 'approve' });
    const unknown = await refusal(
      client().changeMobileNumber({
        reference: randomUUID(),
        bankCustomerId: 'CIF0000000000',
        newMobileNumber: '+254111000555',
      }),
    );
    assert.deepEqual(classed(unknown), [404, 'CUSTOMER_NOT_FOUND', false, false]);
  });

  it('no secret, token, image, id number or phone number in any error message or its details', async () => {
    const request = onboarding();
    const errors: BankError[] = [];
    errors.push(await refusal(client({ clientSecret: 'wrong-secret-value' }).onboard(request)));
    errors.push(await refusal(client().onboard({ ...request, documents: { ...request.documents, selfie: 'AAAA' } })));
    await mode({ onboarding: 'reject' });
    errors.push(await refusal(client().onboard(request)));
    await mode({ onboarding: 'timeout' });
    errors.push(await refusal(client({ timeoutMs: 200 }).onboard(onboarding())));
    const token = await rawToken();
    for (const error of errors) {
      const text = `${error.message} ${JSON.stringify(error.details)}`;
      for (const secret of [
        CREDENTIALS.clientSecret,
        'wrong-secret-value',
        token,
        request.documents.idFront,
        request.documents.selfie,
        request.customer.idNumber,
        request.customer.mobileNumber,
        request.reference,
      ])
        assert.ok(!text.includes(secret), `${error.message}: leaks a value`);
      assert.doesNotMatch(text, /[A-Za-z0-9+/_=-]{40,}/, 'no long base64 run (token, image, credentials)');
    }
  });

  it('the simulator refuses what the bank refuses: no token or an unknown one (401 WWW-Authenticate), no Idempotency-Key (400), not JSON (415), unreadable JSON (400), another grant (400)', async () => {
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${simulator.url}/v1/onboardings`, { method: 'POST', headers, body });
    const none = await post({ 'content-type': 'application/json' }, '{}');
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    const unknown = await post({ authorization: 'Bearer forged', 'content-type': 'application/json' }, '{}');
    assert.equal(unknown.status, 401);
    assert.match(unknown.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    const bearer = `Bearer ${await rawToken()}`;
    const noKey = await post({ authorization: bearer, 'content-type': 'application/json' }, '{}');
    assert.equal(noKey.status, 400);
    assert.deepEqual(
      ((await noKey.json()) as { fields: { field: string }[] }).fields.map((f) => f.field),
      ['Idempotency-Key'],
    );
    const text = await post({ authorization: bearer, 'content-type': 'text/plain', 'idempotency-key': 'k' }, 'x');
    assert.equal(text.status, 415);
    const broken = await post(
      { authorization: bearer, 'content-type': 'application/json', 'idempotency-key': 'k' },
      '{',
    );
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as { code: string }).code, 'INVALID_JSON');
    const grant = await fetch(`${simulator.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${CREDENTIALS.clientId}:${CREDENTIALS.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=password',
    });
    assert.equal(grant.status, 400);
    assert.equal(((await grant.json()) as { error: string }).error, 'unsupported_grant_type');
    assert.deepEqual(await customers(), []);
  });
});

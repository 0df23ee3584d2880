import { strict as assert } from 'node:assert';
import { harness } from '../support/harness';
import { call } from '../support/http';
import {
  activatedCustomer,
  activation,
  activationWhen,
  bankControl,
  codeSentTo,
  newApplicant,
  smsControl,
  textsTo,
  wrong,
} from '../support/current-account';
import { until } from '../support/money';
import { recordHistory } from '../support/histories';
import { workflowIds } from '../../workflows/ids';

const accountStatus = async (id: string) =>
  (await harness().db('accounts').where({ id }).first('status', 'bank_customer_id', 'bank_account_number')) as {
    status: string;
    bank_customer_id: string | null;
    bank_account_number: string | null;
  };

describe('spec 4.7: current-account activation by OTP, then bank onboarding (account-activation/<id>)', () => {
  afterEach(async () => {
    await bankControl('/mode', 'PATCH', { onboarding: 'approve', decisionDelayMs: 100 });
    await smsControl('/mode', 'PATCH', { send: 'normal' });
  });

  it('success: started (201 INITIALIZING), AWAITING_OTP with the code by SMS, confirmed (ONBOARDING, otp_confirmed_at), COMPLETED with the account ACTIVE at the bank', async () => {
    const customer = await newApplicant();
    const started = await activation.start(customer.headers);
    assert.equal(started.status, 201, JSON.stringify(started.body));
    assert.equal(started.body.status, 'INITIALIZING');
    assert.match(started.body.resource_id, /^act_[0-9a-f]{32}$/);
    assert.equal(started.body.otp_confirmed_at, null);
    const code = await codeSentTo(customer.phone);
    const awaiting = await activationWhen(customer.headers, (a) => a.status === 'AWAITING_OTP');
    assert.deepEqual(awaiting.current_verification, { channel: 'SMS' });
    assert.equal(awaiting.id, started.body.id);

    const again = await activation.start(customer.headers);
    assert.equal(again.status, 200, 'the open activation is answered, not a second one');
    assert.equal(again.body.id, started.body.id);

    const confirmed = await activation.confirm(customer.headers, code);
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.ok(['ONBOARDING', 'COMPLETED'].includes(confirmed.body.status));
    assert.ok(confirmed.body.otp_confirmed_at);
    const done = await activationWhen(customer.headers, (a) => a.status === 'COMPLETED');
    assert.ok(done.completed_at);
    assert.equal(done.rejection_reason, null);
    const account = await accountStatus(customer.current);
    assert.equal(account.status, 'ACTIVE');
    assert.ok(account.bank_customer_id && account.bank_account_number);
    const customers = await bankControl<
      {
        partnerReference: string;
        customer: { firstName: string; lastName: string; middleName?: string; dateOfBirth: string };
      }[]
    >('/customers');
    const onboarded = customers.find((c) => c.partnerReference === started.body.id);
    assert.ok(onboarded, 'the bank onboarded it under our activation id');
    assert.deepEqual(
      [
        onboarded.customer.firstName,
        onboarded.customer.middleName,
        onboarded.customer.lastName,
        onboarded.customer.dateOfBirth,
      ],
      ['Amina', 'Wanjiru', 'Otieno', '1990-04-12'],
    );

    const twice = await activation.confirm(customer.headers, code);
    assert.equal(twice.status, 400, 'a code is single use');
    await recordHistory(workflowIds.accountActivation(started.body.id), 'accountActivation-completed');
  });

  it('a wrong code answers the attempts left (400); the last wrong one is 429 and rejects the activation (REJECTED, OTP_ATTEMPTS_EXHAUSTED); the right code no longer works', async () => {
    const customer = await newApplicant();
    await activation.start(customer.headers);
    const code = await codeSentTo(customer.phone);
    await activationWhen(customer.headers, (a) => a.status === 'AWAITING_OTP');
    const max = harness().config.OTP_MAX_ATTEMPTS;
    for (let left = max - 1; left > 0; left -= 1) {
      const reply = await activation.confirm(customer.headers, wrong(code));
      assert.equal(reply.status, 400);
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description'], 'the plain error shape');
      assert.equal(reply.body.code, 'BAD_REQUEST');
      assert.match(reply.body.description, new RegExp(`${left} attempts? left`));
    }
    const locking = await activation.confirm(customer.headers, wrong(code));
    assert.equal(locking.status, 429, 'attempts per code used up: TOO_MANY_REQUESTS');
    assert.equal(locking.body.code, 'TOO_MANY_REQUESTS');
    assert.match(locking.body.description, /Too many wrong codes/);
    assert.ok(Number(locking.headers.get('retry-after')) >= 1);
    const rejected = await activation.get(customer.headers);
    assert.equal(rejected.body.status, 'REJECTED');
    assert.equal(rejected.body.rejection_reason, 'OTP_ATTEMPTS_EXHAUSTED');
    assert.ok(rejected.body.rejected_at);
    const late = await activation.confirm(customer.headers, code);
    assert.equal(late.status, 400, 'locked: even the right code is refused');
    assert.equal((await accountStatus(customer.current)).status, 'PENDING_ACTIVATION');
  });

  it('a malformed code is refused before it counts (400, attempts unchanged)', async () => {
    const customer = await newApplicant();
    await activation.start(customer.headers);
    const code = await codeSentTo(customer.phone);
    for (const bad of ['12345', '1234567', 'abcdef', '12 456']) {
      const reply = await activation.confirm(customer.headers, bad);
      assert.equal(reply.status, 400, bad);
      assert.equal(reply.body.code, 'BAD_REQUEST');
    }
    const wrongOnce = await activation.confirm(customer.headers, wrong(code));
    assert.match(wrongOnce.body.description, new RegExp(`${harness().config.OTP_MAX_ATTEMPTS - 1} attempts left`));
  });

  it('resend: refused within the cool-down (429, Retry-After); after it a new code replaces the old one', async () => {
    const customer = await newApplicant();
    await activation.start(customer.headers);
    const first = await codeSentTo(customer.phone);
    await activationWhen(customer.headers, (a) => a.status === 'AWAITING_OTP');
    const soon = await activation.resend(customer.headers);
    assert.equal(soon.status, 429, JSON.stringify(soon.body));
    assert.equal(soon.body.code, 'TOO_MANY_REQUESTS');
    assert.ok(Number(soon.headers.get('retry-after')) >= 1);
    await new Promise((resolve) => setTimeout(resolve, harness().config.OTP_RESEND_COOLDOWN + 200));
    const resent = await activation.resend(customer.headers);
    assert.equal(resent.status, 200, JSON.stringify(resent.body));
    const second = await codeSentTo(customer.phone, 2);
    if (second !== first) {
      const old = await activation.confirm(customer.headers, first);
      assert.equal(old.status, 400, 'the previous code no longer works');
    }
    const confirmed = await activation.confirm(customer.headers, second);
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
  });

  it('expiry: a code past its lifetime is refused (400, ask for another); an activation not confirmed in time is REJECTED (EXPIRED) by its timer', async function () {
    this.timeout(60_000);
    const { config } = harness();
    const customer = await newApplicant();
    const started = await activation.start(customer.headers);
    const code = await codeSentTo(customer.phone);
    await new Promise((resolve) => setTimeout(resolve, config.OTP_TTL + 300));
    const expired = await activation.confirm(customer.headers, code);
    assert.equal(expired.status, 400);
    assert.match(expired.body.description, /expired/);
    const ended = await activationWhen(
      customer.headers,
      (a) => a.status === 'REJECTED',
      'expired',
      config.ACTIVATION_TTL + 10_000,
    );
    assert.equal(ended.rejection_reason, 'EXPIRED');
    await recordHistory(workflowIds.accountActivation(started.body.id as string), 'accountActivation-expired');
  });

  it('SMS failures: the gateway failing is retried until the code goes out', async () => {
    const customer = await newApplicant();
    await smsControl('/mode', 'PATCH', { send: 'error' });
    await activation.start(customer.headers);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal((await textsTo(customer.phone)).length, 0);
    await smsControl('/mode', 'PATCH', { send: 'normal' });
    const code = await codeSentTo(customer.phone);
    await activationWhen(customer.headers, (a) => a.status === 'AWAITING_OTP');
    assert.equal((await activation.confirm(customer.headers, code)).status, 200);
  });

  it('bank failures: a throttling bank is asked again until it answers; a pending onboarding is asked about until decided', async () => {
    const customer = await newApplicant();
    await bankControl('/mode', 'PATCH', { onboarding: 'throttle' });
    await activation.start(customer.headers);
    assert.equal((await activation.confirm(customer.headers, await codeSentTo(customer.phone))).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal((await activation.get(customer.headers)).body.status, 'ONBOARDING');
    await bankControl('/mode', 'PATCH', { onboarding: 'pending', decisionDelayMs: 1_000, pendingDecision: 'approve' });
    const done = await activationWhen(customer.headers, (a) => a.status === 'COMPLETED');
    assert.ok(done.completed_at);
    assert.equal((await accountStatus(customer.current)).status, 'ACTIVE');
  });

  it('bank failures: an onboarding the bank made but answered with a 5xx is found by the status read, never submitted twice', async () => {
    const customer = await newApplicant();
    await bankControl('/mode', 'PATCH', { onboarding: 'error' });
    const started = await activation.start(customer.headers);
    assert.equal((await activation.confirm(customer.headers, await codeSentTo(customer.phone))).status, 200);
    await activationWhen(customer.headers, (a) => a.status === 'COMPLETED');
    const customers = await bankControl<{ partnerReference: string }[]>('/customers');
    assert.equal(customers.filter((c) => c.partnerReference === started.body.id).length, 1, 'one customer at the bank');
    assert.equal((await accountStatus(customer.current)).status, 'ACTIVE');
  });

  it('bank refusal: REJECTED with the bank’s code (BANK_ID_MISMATCH); the account stays inactive', async () => {
    const customer = await newApplicant();
    await bankControl('/mode', 'PATCH', { onboarding: 'reject', onboardingRejection: 'ID_MISMATCH' });
    const started = await activation.start(customer.headers);
    assert.equal((await activation.confirm(customer.headers, await codeSentTo(customer.phone))).status, 200);
    const ended = await activationWhen(customer.headers, (a) => a.status === 'REJECTED');
    assert.equal(ended.rejection_reason, 'BANK_ID_MISMATCH');
    assert.equal((await accountStatus(customer.current)).status, 'PENDING_ACTIVATION');
    await recordHistory(workflowIds.accountActivation(started.body.id as string), 'accountActivation-bank-rejected');
    // A new activation may start; GET then answers the most recent one.
    await bankControl('/mode', 'PATCH', { onboarding: 'approve' });
    const next = await activation.start(customer.headers);
    assert.equal(next.status, 201);
    assert.notEqual(next.body.id, started.body.id);
    assert.equal((await activation.get(customer.headers)).body.id, next.body.id);
  });

  it('GET …/activation: 404 with no activation, and with no current account; an active account needs none (400)', async () => {
    const customer = await newApplicant();
    const none = await activation.get(customer.headers);
    assert.equal(none.status, 404);
    assert.deepEqual(Object.keys(none.body).sort(), ['code', 'description']);
    const noAccount = await newApplicant();
    await harness().db('accounts').where({ id: noAccount.current }).del();
    assert.equal((await activation.get(noAccount.headers)).status, 404);
    assert.equal((await activation.start(noAccount.headers)).status, 404);
    const active = await activation.start((await activatedCustomer()).headers);
    assert.equal(active.status, 400, 'an active account needs no activation');
  });

  it('a user without a provisioned KYC subject cannot activate: 404 (no subject, or KYC not approved)', async () => {
    for (const subject of ['none', 'unapproved'] as const) {
      const customer = await newApplicant({ subject });
      const reply = await activation.start(customer.headers);
      assert.equal(reply.status, 404, subject);
      assert.match(reply.body.description, /No provisioned KYC subject/);
      assert.equal((await textsTo(customer.phone)).length, 0, 'no code sent');
    }
  });

  it('the deprecated POST /v1/me/current-account/activations/{activationId}/otp/confirm works, with Deprecation and a Link to its successor; another user’s activation is 404', async () => {
    const [customer, other] = await Promise.all([newApplicant(), newApplicant()]);
    const started = await activation.start(customer.headers);
    const code = await codeSentTo(customer.phone);
    await activationWhen(customer.headers, (a) => a.status === 'AWAITING_OTP');
    const path = `/v1/me/current-account/activations/${started.body.id}/otp/confirm`;
    const foreign = await call('POST', path, { headers: other.headers, json: { otp_code: code } });
    assert.equal(foreign.status, 404);
    const reply = await call('POST', path, { headers: customer.headers, json: { otp_code: code } });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.match(reply.headers.get('deprecation') ?? '', /^@\d+$/);
    assert.match(
      reply.headers.get('link') ?? '',
      /<\/v1\/user\/accounts\/current\/activation\/otp\/confirm>; rel="successor-version"/,
    );
    assert.equal(reply.body.id, started.body.id);
    const notDigits = await call('POST', path, { headers: customer.headers, json: { otp_code: 123456 } });
    assert.equal(notDigits.status, 400);
  });

  it('abuse limits: codes per user per hour (429 with Retry-After) before any more SMS is sent', async () => {
    const { config, db } = harness();
    const customer = await newApplicant();
    // The hour already holds the user's whole allowance.
    await db('otp_sends').insert(
      Array.from({ length: config.OTP_SENDS_PER_HOUR_PER_USER }, () => ({
        organization_id: customer.user.organization_id,
        user_id: customer.user.id,
        purpose: 'ACTIVATION',
        reference_id: customer.user.id,
        channel: 'SMS',
        destination: customer.phone,
        sent_at: new Date(Date.now() - 10 * 60_000),
      })),
    );
    const reply = await activation.start(customer.headers);
    assert.equal(reply.status, 429);
    const retryAfter = Number(reply.headers.get('retry-after'));
    assert.ok(retryAfter > 40 * 60 && retryAfter <= 50 * 60, `Retry-After ${retryAfter}`);
    assert.equal((await textsTo(customer.phone)).length, 0);
    await until('nothing started', async () => (await activation.get(customer.headers)).status === 404);
  });
});

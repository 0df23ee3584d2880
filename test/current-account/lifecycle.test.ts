import { strict as assert } from 'node:assert';
import { DEMO, seedIds } from '../../db/seeds/demo';
import { stageDemoCustomers } from '../../dev/seed-stages';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { applyPartnerB, newBorrower, offerFor } from '../support/loans';
import { fund, money, newCustomer, payerNumber, sendMoney, stkPush } from '../support/money';
import { backendToken } from '../support/tokens';

const accountsOf = (userId: string) =>
  harness().db('accounts').where({ user_id: userId }).orderBy('type').select('type', 'status', 'bank_customer_id');

describe('spec 4.7: the customer lifecycle (new → kyc-approved → active)', () => {
  it('a new customer: the current account PENDING_ACTIVATION with no bank customer, KYC not started; deposits, payouts and loan offers are refused (400 ACCOUNT_NOT_ACTIVATED); e-mail verification is open', async () => {
    const customer = await newCustomer(0, { stage: 'new' });
    assert.deepEqual(await accountsOf(customer.user.id), [
      { type: 'CREDIT', status: 'ACTIVE', bank_customer_id: null },
      { type: 'CURRENT', status: 'PENDING_ACTIVATION', bank_customer_id: null },
    ]);
    assert.equal((await harness().db('kyc_applications').where({ user_id: customer.user.id })).length, 0);
    const deposit = await stkPush(customer.headers, {
      account_id: customer.current,
      amount: money(100_000),
      mobile_number: customer.phone,
    });
    assert.equal(deposit.status, 400, deposit.text);
    assert.equal(deposit.body.code, 'BAD_REQUEST');
    assert.match(deposit.body.description, /^ACCOUNT_NOT_ACTIVATED: /);
    await fund(customer.current, 100_000);
    const payout = await sendMoney(customer.headers, {
      account_id: customer.current,
      amount: money(10_000),
      mobile_number: customer.phone,
    });
    assert.equal(payout.status, 400, payout.text);
    assert.match(payout.body.description, /^ACCOUNT_NOT_ACTIVATED: /);
    const { db } = harness();
    assert.equal((await db('transactions').where({ account_id: customer.current })).length, 0, 'nothing created');
    // An approved verification is not enough: the loan needs the activated current account.
    const verified = await newCustomer(0, { stage: 'kyc-approved' });
    const offer = await offerFor(verified.headers);
    assert.equal(offer.status, 400, offer.text);
    assert.match(offer.body.description, /^ACCOUNT_NOT_ACTIVATED: /);
    const email = await call('POST', '/v1/user/accounts/current/email/verifications', { headers: customer.headers });
    assert.equal(email.status, 201, email.text);
  });

  it('active: after KYC and activation through the API the current account is ACTIVE with the bank’s customer, and takes deposits and offers', async () => {
    const customer = await newCustomer(0);
    const [credit, current] = await accountsOf(customer.user.id);
    assert.equal(credit!.status, 'ACTIVE');
    assert.equal(current!.status, 'ACTIVE');
    assert.ok(current!.bank_customer_id);
    const deposit = await stkPush(customer.headers, {
      account_id: customer.current,
      amount: money(100_000),
      mobile_number: customer.phone,
    });
    assert.equal(deposit.status, 201, deposit.text);
    const repaymentFromAnyone = await stkPush(customer.headers, {
      account_id: customer.credit,
      amount: money(100_000),
      mobile_number: payerNumber(0),
    });
    assert.equal(repaymentFromAnyone.status, 400, 'nothing owed yet on the credit account');
    assert.equal((await offerFor(customer.headers)).status, 201);
  });

  it('an offer made while the current account was active is not taken once it waits for activation again (400 ACCOUNT_NOT_ACTIVATED, nothing held or paid)', async () => {
    const borrower = await newBorrower();
    const offer = await offerFor(borrower.headers);
    assert.equal(offer.status, 201, offer.text);
    // As the migration leaves an account opened ACTIVE before the bank had its customer.
    await harness().db('accounts').where({ id: borrower.current }).update({ status: 'PENDING_ACTIVATION' });
    const applied = await applyPartnerB(borrower.headers, {
      application_id: offer.body.id,
      loan_amount: 200_000,
      tenure: { duration: 4, unit: 'WEEKS' },
      collateral_amount: 20_000,
    });
    assert.equal(applied.status, 400, applied.text);
    assert.match(applied.body.description, /^ACCOUNT_NOT_ACTIVATED: /);
    // The hold is written with the loan, in one transaction: no loan, nothing held.
    assert.equal((await harness().db('loans').where({ user_id: borrower.user.id })).length, 0, 'no loan');
    const application = await harness().db('loan_applications').where({ id: offer.body.id }).first('status');
    assert.equal(application.status, 'APPROVED', 'the offer stays open');
  });

  it('an ACTIVE current account without the bank’s customer cannot be written (the database refuses it)', async () => {
    const customer = await newCustomer(0, { stage: 'new' });
    await assert.rejects(
      harness().db('accounts').where({ id: customer.current }).update({ status: 'ACTIVE' }),
      /accounts_active_current_at_bank/,
    );
  });

  it('the demo seed: npm start’s staging takes one customer to each stage through the API, once; seed:ids names them', async function () {
    this.timeout(90_000);
    const { db, baseUrl, config } = harness();
    const client = { apiUrl: baseUrl, smsUrl: config.SMS_PROVIDER_URL!, tokenFor: (sub: string) => backendToken(sub) };
    await stageDemoCustomers(db, client);
    const byStage = seedIds().customers_by_stage as Record<string, { id: string; user: string }>;
    assert.deepEqual(Object.keys(byStage).sort(), ['active', 'kyc-approved', 'new']);
    const statusOf = async (userId: string) => ({
      current: (await db('accounts').where({ user_id: userId, type: 'CURRENT' }).first()).status,
      kyc: (await db('kyc_applications').where({ user_id: userId }).orderBy('created_at', 'desc').first())?.status,
    });
    assert.deepEqual(await statusOf(byStage.new!.id), { current: 'PENDING_ACTIVATION', kyc: 'DRAFT' });
    assert.deepEqual(await statusOf(byStage['kyc-approved']!.id), { current: 'PENDING_ACTIVATION', kyc: 'APPROVED' });
    assert.deepEqual(await statusOf(byStage.active!.id), { current: 'ACTIVE', kyc: 'APPROVED' });
    assert.equal((seedIds().users.customerByAuthId as { stage?: string }).stage, 'active');
    const counts = async () => ({
      applications: (
        await db('kyc_applications').whereIn(
          'user_id',
          Object.values(byStage).map((c) => c.id),
        )
      ).length,
      activations: (await db('current_account_activations').where({ user_id: byStage.active!.id })).length,
    });
    const before = await counts();
    await stageDemoCustomers(db, client);
    assert.deepEqual(await counts(), before, 'a customer at their stage is left alone');
    assert.equal(DEMO.customerStages.customerByAuthId.stage, 'active');
  });
});

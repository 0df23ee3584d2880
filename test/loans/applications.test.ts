import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { createApiKey } from '../../api/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { workflowIds } from '../../workflows/ids';
import { repaymentSignal } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { assertDeprecated, call } from '../support/http';
import { applyPartnerB, newBorrower, offerFor, repay, repayAll, signalsTaken, takeLoan } from '../support/loans';
import { balanceOf, fund, journalKinds, until } from '../support/money';
import { bearer } from '../support/tokens';

const ORG = DEMO.organizations.demo.id;
const COMMON = [
  'account_id',
  'currency',
  'expires_at',
  'id',
  'loan_amount',
  'loan_product_type',
  'resource_id',
  'status',
  'tenure',
];
const sorted = (keys: string[]) => [...keys].sort();

describe('spec 4.3: loan eligibility and terms (organization and partner-a)', () => {
  it('an eligible borrower gets an APPROVED offer with exactly the organization-create fields, and the same offer when asking again', async () => {
    const borrower = await newBorrower();
    const first = await offerFor(borrower.headers);
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(
      Object.keys(first.body).sort(),
      sorted([...COMMON, 'interest_rate', 'standard_interest_rate', 'terms_range', 'penalty_terms']),
    );
    assert.equal(first.body.status, 'APPROVED');
    assert.match(first.body.resource_id, /^lapp_/);
    assert.equal(first.body.currency, 'KES');
    assert.equal(first.body.account_id, borrower.credit);
    assert.equal(first.body.loan_product_type, 'FLAT_RATE');
    assert.equal(first.body.loan_amount, 1_000_000, 'a first loan: the product’s first-loan limit');
    assert.deepEqual(first.body.tenure, { duration: 4, unit: 'WEEKS' });
    assert.deepEqual(first.body.interest_rate, { basis_points: 250, period_value: 7, period_unit: 'DAYS' });
    assert.deepEqual(first.body.terms_range, { min_loan_amount: 100_000, max_loan_amount: 1_000_000 });
    assert.deepEqual(Object.keys(first.body.penalty_terms).sort(), [
      'calculation_basis',
      'grace_period_days',
      'max_charge_days',
      'period_days',
      'rate_basis_points',
      'trigger',
      'type',
    ]);
    assert.ok(Date.parse(first.body.expires_at) > Date.now());
    const again = await offerFor(borrower.headers);
    assert.equal(again.status, 200);
    assert.equal(again.body.id, first.body.id);
  });

  it('partner-a answers exactly the partner-a fields (weekly rate, tenure_weeks, no max_charge_days)', async () => {
    const borrower = await newBorrower();
    const reply = await offerFor(borrower.headers, '/v1/accounts/loan/applications/partner-a');
    assert.equal(reply.status, 201, reply.text);
    assert.deepEqual(
      Object.keys(reply.body).sort(),
      sorted([...COMMON, 'tenure_weeks', 'weekly_interest_rate_basis_points', 'terms_range', 'penalty_terms']),
    );
    assert.equal(reply.body.weekly_interest_rate_basis_points, 300);
    assert.equal(reply.body.tenure_weeks, 4);
    assert.equal('max_charge_days' in reply.body.penalty_terms, false);
  });

  it('user_id: an API key names the borrower in the body; a user token must not send one; a key must', async () => {
    const borrower = await newBorrower();
    const { key } = await createApiKey(harness().db, { organizationId: ORG, permissions: ['loans.write'] });
    const byKey = await offerFor(bearer(key), undefined, { user_id: borrower.user.id });
    assert.equal(byKey.status, 201, byKey.text);
    assert.equal(byKey.body.account_id, borrower.credit);
    const keyWithout = await offerFor(bearer(key));
    assert.equal(keyWithout.status, 400);
    assert.equal(keyWithout.body.code, 'BAD_REQUEST');
    const userWith = await offerFor(borrower.headers, undefined, { user_id: borrower.user.id });
    assert.equal(userWith.status, 400);
    assert.match(userWith.body.description, /^NOT_ALLOWED: .*user_id/);
    const stranger = await offerFor(bearer(key), undefined, { user_id: DEMO.users.secondCustomer.id });
    assert.equal(stranger.status, 404, 'another organization’s user is not confirmed');
    const otherOrg = await offerFor(borrower.headers, `/v1/accounts/loan/applications/${DEMO.organizations.second.id}`);
    assert.equal(otherOrg.status, 404);
  });

  it('refuses with the reason: waiting list (403 WAITING_LIST), KYC not approved, over the limit, in arrears', async () => {
    const waiting = await newBorrower({ status: 'WAITING_LIST' });
    const onList = await offerFor(waiting.headers);
    assert.equal(onList.status, 403);
    assert.equal(onList.body.code, 'WAITING_LIST');

    const unverified = await newBorrower({ kyc: 'none' });
    const noKyc = await offerFor(unverified.headers);
    assert.equal(noKyc.status, 400);
    assert.match(noKyc.body.description, /^KYC_NOT_APPROVED: /);

    const greedy = await newBorrower();
    const over = await offerFor(greedy.headers, undefined, { loan_amount: 1_000_001 });
    assert.equal(over.status, 400);
    assert.match(over.body.description, /^OVER_LIMIT: /);

    const late = await newBorrower();
    const offer = await offerFor(late.headers);
    const applied = await applyPartnerB(late.headers, {
      application_id: offer.body.id,
      loan_amount: 200_000,
      tenure: { duration: 1, unit: 'WEEKS' },
      collateral_amount: 20_000,
    });
    assert.equal(applied.status, 200, applied.text);
    const loanId = (await harness().db('loan_applications').where({ id: offer.body.id }).first()).loan_id;
    await harness().db('installments').where({ loan_id: loanId }).update({ status: 'OVERDUE' });
    const arrears = await offerFor(late.headers);
    assert.equal(arrears.status, 400);
    assert.match(arrears.body.description, /^IN_ARREARS: /);
  });
});

describe('spec 4.3: taking an offer (partner-b and the deprecated apply)', () => {
  it('holds the collateral, makes the loan and its schedule, disburses once, and answers exactly the apply fields', async () => {
    const borrower = await newBorrower({ funds: 300_000 });
    const offer = await offerFor(borrower.headers);
    const reply = await applyPartnerB(borrower.headers, {
      application_id: offer.body.id,
      loan_amount: 1_000_000,
      tenure: { duration: 4, unit: 'WEEKS' },
      collateral_amount: 100_000,
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(
      Object.keys(reply.body).sort(),
      sorted([
        ...COMMON,
        'tenure_weeks',
        'weekly_interest_rate_basis_points',
        'collateral_amount',
        'collateral_percentage_basis_points',
        'collateral_hold_id',
        'total_repayment_amount',
      ]),
    );
    assert.equal(reply.body.status, 'DISBURSED');
    assert.equal(reply.body.loan_amount, 1_000_000);
    assert.equal(reply.body.total_repayment_amount, 1_100_000, '10,000.00 at 250 bps a week over 4 weeks');
    assert.equal(reply.body.collateral_percentage_basis_points, 1_000);
    assert.match(reply.body.collateral_hold_id, /^[0-9a-f-]{36}$/);
    // 3,000.00 in, 1,000.00 held, 10,000.00 disbursed: 12,000.00 available, 13,000.00 in all.
    assert.deepEqual(await balanceOf(borrower.current), { balance: 1_300_000, held: 100_000, available: 1_200_000 });
    const loanId = (await harness().db('loan_applications').where({ id: offer.body.id }).first()).loan_id as string;
    assert.deepEqual(await journalKinds(loanId), ['COLLATERAL_HOLD', 'DISBURSEMENT', 'INTEREST']);
    assert.ok(await ledgerIsBalanced(harness().db));

    const schedule = await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: borrower.headers });
    assert.equal(schedule.status, 200, schedule.text);
    assert.deepEqual(
      schedule.body.data.map((i: { position: number; amount: { total: number } }) => [i.position, i.amount.total]),
      [
        [1, 275_000],
        [2, 275_000],
        [3, 275_000],
        [4, 275_000],
      ],
    );
    for (const installment of schedule.body.data)
      assert.ok(['UPCOMING', 'DUE', 'OVERDUE'].includes(installment.status));
    assert.deepEqual(Object.keys(schedule.body.data[0]).sort(), [
      'amount',
      'currency',
      'due_date',
      'id',
      'loan_id',
      'outstanding',
      'paid',
      'position',
      'status',
    ]);
    await recordHistory(workflowIds.loanApplication(offer.body.id), 'loanApplication-accepted-local-steps');
  });

  it('Idempotency-Key: an identical retry replays the answer, a changed body is 409, nothing moves twice', async () => {
    const borrower = await newBorrower();
    const offer = await offerFor(borrower.headers);
    const body = {
      application_id: offer.body.id,
      loan_amount: 500_000,
      tenure: { duration: 2, unit: 'WEEKS' },
      collateral_amount: 50_000,
    };
    const key = randomUUID();
    const first = await applyPartnerB(borrower.headers, body, key);
    assert.equal(first.status, 200, first.text);
    const again = await applyPartnerB(borrower.headers, body, key);
    assert.equal(again.status, 200);
    assert.equal(again.text, first.text);
    const changed = await applyPartnerB(borrower.headers, { ...body, loan_amount: 400_000 }, key);
    assert.equal(changed.status, 409);
    assert.equal((await harness().db('loans').where({ application_id: offer.body.id })).length, 1);
    assert.deepEqual(await balanceOf(borrower.current), { balance: 1_000_000, held: 50_000, available: 950_000 });
  });

  it('the deprecated apply announces its successor; the validator refuses terms outside the offer, a short balance, a taken offer', async () => {
    const borrower = await newBorrower({ funds: 10_000 });
    const offer = await offerFor(borrower.headers);
    const legacy = (body: unknown) =>
      call('POST', `/v1/accounts/credit/applications/${offer.body.id}/apply`, {
        headers: borrower.headers,
        json: body,
      });
    const refusedWith = async (body: unknown, path: string, subCode: string) => {
      const reply = await legacy(body);
      assert.equal(reply.status, 400, reply.text);
      assert.match(reply.body.description, new RegExp(`^${subCode}: `), path);
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description'], 'the plain error shape');
      assertDeprecated(reply, '/v1/accounts/loan/applications/partner-b');
    };
    await refusedWith({ loan_amount: 50_000, tenure: 2, collateral_amount: 5_000 }, 'body.loan_amount', 'OUT_OF_RANGE');
    await refusedWith(
      { loan_amount: 2_000_000, tenure: 2, collateral_amount: 200_000 },
      'body.loan_amount',
      'OUT_OF_RANGE',
    );
    await refusedWith({ loan_amount: 200_000, tenure: 5, collateral_amount: 20_000 }, 'body.tenure', 'OUT_OF_RANGE');
    await refusedWith(
      { loan_amount: 200_000, tenure: 2, collateral_amount: 19_999 },
      'body.collateral_amount',
      'OUT_OF_RANGE',
    );
    await refusedWith(
      { loan_amount: 200_000, tenure: 2, collateral_amount: 20_000 },
      'path.application_id',
      'INSUFFICIENT_FUNDS',
    );

    await fund(borrower.current, 20_000);
    const taken = await legacy({ loan_amount: 200_000, tenure: 2, collateral_amount: 20_000 });
    assert.equal(taken.status, 200, taken.text);
    assertDeprecated(taken, '/v1/accounts/loan/applications/partner-b');
    assert.equal(taken.body.tenure_weeks, 2);
    await refusedWith(
      { loan_amount: 200_000, tenure: 2, collateral_amount: 20_000 },
      'path.application_id',
      'OFFER_TAKEN',
    );
    const stranger = await newBorrower();
    const notTheirs = await applyPartnerB(stranger.headers, {
      application_id: offer.body.id,
      loan_amount: 200_000,
      tenure: { duration: 2, unit: 'WEEKS' },
      collateral_amount: 20_000,
    });
    assert.equal(notTheirs.status, 404, 'another borrower’s offer is not confirmed');
  });
});

describe('spec 4.3: the offer and the loan as workflows', () => {
  it('an offer nobody takes expires by its own timer (EXPIRED), and taking it then is refused', async () => {
    const borrower = await newBorrower();
    const { db } = harness();
    // The product's offer lifetime, shortened for this one offer (terms are copied into the offer).
    const product = db('loan_products').where({ organization_id: ORG, code: 'partner-a' });
    const { offer_ttl_ms: lifetime } = await product.clone().first('offer_ttl_ms');
    await product.clone().update({ offer_ttl_ms: 1_500 });
    const offer = await offerFor(borrower.headers, '/v1/accounts/loan/applications/partner-a').finally(() =>
      product.clone().update({ offer_ttl_ms: lifetime }),
    );
    assert.equal(offer.status, 201, offer.text);
    await until(
      'the offer expired',
      async () => (await db('loan_applications').where({ id: offer.body.id }).first()).status === 'EXPIRED',
      10_000,
    );
    const row = await db('loan_applications').where({ id: offer.body.id }).first();
    assert.ok(row.expired_at);
    const late = await applyPartnerB(borrower.headers, {
      application_id: offer.body.id,
      loan_amount: 200_000,
      tenure: { duration: 1, unit: 'WEEKS' },
      collateral_amount: 20_000,
    });
    assert.equal(late.status, 400);
    assert.match(late.body.description, /^OFFER_EXPIRED: /);
    await recordHistory(workflowIds.loanApplication(offer.body.id), 'loanApplication-expired');
  });

  it("the loan's workflow marks installments DUE then OVERDUE, and closes the repaid loan, releasing the collateral", async () => {
    const borrower = await newBorrower({ funds: 100_000 });
    const offer = await offerFor(borrower.headers);
    const { db } = harness();
    // A two-day loan in the test's one-second days: the schedule runs its course in seconds.
    await db('loan_applications').where({ id: offer.body.id }).update({ tenure_unit: 'DAYS' });
    const terms = (await db('loan_applications').where({ id: offer.body.id }).first()).terms;
    assert.ok(terms);
    const applied = await call('POST', `/v1/accounts/credit/applications/${offer.body.id}/apply`, {
      headers: borrower.headers,
      json: { loan_amount: 200_000, tenure: 2, collateral_amount: 20_000 },
    });
    assert.equal(applied.status, 200, applied.text);
    const loanId = (await db('loan_applications').where({ id: offer.body.id }).first()).loan_id as string;
    await until(
      'the installment overdue',
      async () => (await db('installments').where({ loan_id: loanId }).first()).status === 'OVERDUE',
      15_000,
    );
    assert.ok((await db('loans').where({ id: loanId }).first()).arrears_at, 'the loan went into arrears');
    // Repaid by pushes on the credit account (again if a penalty fell due in the meantime).
    await repayAll(borrower);
    await until(
      'the loan repaid',
      async () => (await db('loans').where({ id: loanId }).first()).status === 'REPAID',
      15_000,
    );
    assert.deepEqual(await journalKinds(loanId), ['COLLATERAL_HOLD', 'COLLATERAL_RELEASE', 'DISBURSEMENT', 'INTEREST']);
    const balance = await balanceOf(borrower.current);
    assert.equal(balance.held, 0, 'the collateral is released');
    await recordHistory(workflowIds.loan(loanId), 'loan-overdue-repaid-by-push-kept-timer');
  });

  it("an operator's cancellation ends a loan's run as cancelled, also once a repayment woke it (its step's timer kept)", async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const pushed = await repay(borrower, 10_000);
    const run = harness().client.workflow.getHandle(workflowIds.loan(loanId));
    // Allocated by its push's run (this run is on time): handed here too, as a run behind its
    // clock would be, it wakes the run, whose allocation step then finds it done.
    await run.signal(repaymentSignal, { transactionId: pushed.id });
    await signalsTaken(run, 'repayment', 1);
    await run.cancel();
    await assert.rejects(
      run.result(),
      (error: unknown) => error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure,
    );
    assert.equal((await run.describe()).status.name, 'CANCELLED');
    const { events } = await run.fetchHistory();
    const failedTasks = events!.filter((e) => e.workflowTaskFailedEventAttributes);
    assert.equal(failedTasks.length, 0, 'no workflow task failed on the way (an unhandled cancelled timer fails them)');
  });
});

describe('spec 4.3, hostile review: taking an offer re-checks the borrower, and one loan runs at a time', () => {
  const take = (headers: Record<string, string>, applicationId: string, key?: string) =>
    applyPartnerB(
      headers,
      {
        application_id: applicationId,
        loan_amount: 200_000,
        tenure: { duration: 2, unit: 'WEEKS' },
        collateral_amount: 20_000,
      },
      key,
    );

  it('two offers on two products taken at once: one loan, the other refused', async () => {
    const borrower = await newBorrower();
    const standard = await offerFor(borrower.headers);
    const partnerA = await offerFor(borrower.headers, '/v1/accounts/loan/applications/partner-a');
    assert.equal(partnerA.status, 201, partnerA.text);
    const replies = await Promise.all([
      take(borrower.headers, standard.body.id),
      take(borrower.headers, partnerA.body.id),
    ]);
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, 400], replies.map((r) => r.text).join(' | '));
    assert.equal((await harness().db('loans').where({ user_id: borrower.user.id })).length, 1);
    assert.equal((await take(borrower.headers, partnerA.body.id)).status, 400, 'and not later either');
  });

  it('identical offer requests of one borrower at once share one offer: one 201, the others 200, all the same open offer', async () => {
    const { db } = harness();
    for (let round = 0; round < 3; round++) {
      const borrower = await newBorrower();
      const replies = await Promise.all(Array.from({ length: 8 }, () => offerFor(borrower.headers)));
      for (const reply of replies) assert.ok([200, 201].includes(reply.status), `${reply.status} ${reply.text}`);
      assert.deepEqual(
        replies.map((r) => r.status).sort(),
        [200, 200, 200, 200, 200, 200, 200, 201],
        'one request made the offer',
      );
      assert.equal(new Set(replies.map((r) => r.body.id)).size, 1, 'every answer names the same offer');
      const offer = await db('loan_applications').where({ id: replies[0]!.body.id }).first();
      assert.equal(offer.status, 'APPROVED');
    }
  });

  it('offer requests of one borrower at once, on the same terms and on others: no 5xx, each answer on the terms it asked, one offer stays open', async () => {
    const { db } = harness();
    for (let round = 0; round < 4; round++) {
      const borrower = await newBorrower();
      // Identical asks race to insert; an ask on other terms withdraws the live offer under them.
      const asks = Array.from({ length: 12 }, (_, i) => (i % 3 === 2 ? { loan_amount: 500_000 + i * 1_000 } : {}));
      const replies = await Promise.all(asks.map((json) => offerFor(borrower.headers, undefined, json)));
      replies.forEach((reply, i) => {
        // 409: rivals replaced the offer through every attempt (ask again); never a 5xx.
        assert.ok([200, 201, 409].includes(reply.status), `${reply.status} ${reply.text}`);
        if (reply.status !== 409) assert.equal(reply.body.loan_amount, asks[i]!.loan_amount ?? 1_000_000);
      });
      const open = await db('loan_applications').where({ user_id: borrower.user.id, status: 'APPROVED' });
      assert.equal(open.length, 1);
      const again = await offerFor(borrower.headers, undefined, { loan_amount: Number(open[0].loan_amount) });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.id, open[0].id, 'asking again answers the offer left open');
    }
  });

  it('acceptances sent while another is being decided wait for it: each refused for a short balance (none 503, none told the offer was taken); then it can be', async () => {
    const borrower = await newBorrower({ funds: 10_000 });
    const offer = await offerFor(borrower.headers);
    const terms = {
      application_id: offer.body.id as string,
      loan_amount: 200_000,
      tenure: { duration: 2, unit: 'WEEKS' },
      collateral_amount: 20_000,
    };
    // Ten at once: one decided, a few waiting their turn in the run, the rest asking again from the
    // API (OFFER_BUSY) within IDEMPOTENCY_WAIT: every one gets its verdict, none a 503.
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => applyPartnerB(borrower.headers, terms, randomUUID())),
    );
    for (const reply of replies) {
      assert.equal(reply.status, 400, reply.text);
      assert.match(reply.body.description, /^INSUFFICIENT_FUNDS: /, 'refused for the balance, not as taken');
    }
    await fund(borrower.current, 20_000);
    const [taken, late] = await Promise.all([
      applyPartnerB(borrower.headers, terms, randomUUID()),
      applyPartnerB(borrower.headers, terms, randomUUID()),
    ]).then((both) => [...both].sort((a, b) => a.status - b.status));
    assert.equal(taken!.status, 200, taken!.text);
    assert.equal(late!.status, 400, late!.text);
    assert.match(late!.body.description, /^OFFER_TAKEN: /);
    const loans = await harness().db('loans').where({ application_id: terms.application_id });
    assert.equal(loans.length, 1);
    await recordHistory(
      workflowIds.loanApplication(terms.application_id),
      'loanApplication-acceptances-wait-their-turn',
    );
  });

  it('spec 4.3: twenty concurrent acceptances of one offer, each under its own key: one loan (200) and nineteen OFFER_TAKEN (400), none a 503 to send again', async () => {
    const borrower = await newBorrower();
    const offer = await offerFor(borrower.headers);
    const terms = {
      application_id: offer.body.id as string,
      loan_amount: 200_000,
      tenure: { duration: 2, unit: 'WEEKS' },
      collateral_amount: 20_000,
    };
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => applyPartnerB(borrower.headers, terms, randomUUID())),
    );
    const statuses = replies.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, ...Array<number>(19).fill(400)], replies.map((r) => r.text).join('\n'));
    for (const reply of replies.filter((r) => r.status === 400)) assert.match(reply.body.description, /^OFFER_TAKEN: /);
    assert.equal((await harness().db('loans').where({ application_id: terms.application_id })).length, 1);
  });

  it('an API key taking an offer for a borrower put on the waiting list, or whose KYC was revoked, is refused', async () => {
    const { db } = harness();
    const { key } = await createApiKey(db, { organizationId: ORG, permissions: ['loans.write'] });
    for (const change of [{ users: { status: 'WAITING_LIST' } }, { kyc: { status: 'REJECTED' } }]) {
      const borrower = await newBorrower();
      const offer = await offerFor(bearer(key), undefined, { user_id: borrower.user.id });
      assert.equal(offer.status, 201, offer.text);
      if ('users' in change) await db('users').where({ id: borrower.user.id }).update(change.users);
      else await db('kyc_applications').where({ user_id: borrower.user.id }).update(change.kyc);
      const reply = await take(bearer(key), offer.body.id);
      assert.equal(reply.status, 400, reply.text);
      assert.match(reply.body.description, /^(NOT_ELIGIBLE|KYC_NOT_APPROVED): /);
      assert.equal((await db('loans').where({ user_id: borrower.user.id })).length, 0);
    }
  });

  it('a disabled user gets no offer (404); platform keys act for no organization here (404)', async () => {
    const { db } = harness();
    const borrower = await newBorrower();
    await db('users').where({ id: borrower.user.id }).update({ status: 'DISABLED' });
    const { key } = await createApiKey(db, { organizationId: ORG, permissions: ['loans.write'] });
    assert.equal((await offerFor(bearer(key), undefined, { user_id: borrower.user.id })).status, 404);
    const platform = await createApiKey(db, { platform: true, permissions: ['loans.write'] });
    const other = await newBorrower();
    assert.equal((await offerFor(bearer(platform.key), undefined, { user_id: other.user.id })).status, 404);
  });

  it('Idempotency-Key: a retry after the stored answer was lost answers the loan the first request made', async () => {
    const borrower = await newBorrower();
    const offer = await offerFor(borrower.headers);
    const key = randomUUID();
    const first = await take(borrower.headers, offer.body.id, key);
    assert.equal(first.status, 200, first.text);
    // What an API crash after the loan but before the answer was stored leaves: no stored answer.
    assert.equal(await harness().db('idempotency_keys').where({ key }).delete(), 1);
    const again = await take(borrower.headers, offer.body.id, key);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, first.body);
  });

  it('collateral above the loan amount and an amount asked below the product minimum are refused', async () => {
    const borrower = await newBorrower({ funds: 5_000_000 });
    const low = await offerFor(borrower.headers, undefined, { loan_amount: 50 });
    assert.equal(low.status, 400);
    assert.match(low.body.description, /^BELOW_MINIMUM: /);
    const offer = await offerFor(borrower.headers);
    const greedy = await applyPartnerB(borrower.headers, {
      application_id: offer.body.id,
      loan_amount: 200_000,
      tenure: { duration: 2, unit: 'WEEKS' },
      collateral_amount: 200_001,
    });
    assert.equal(greedy.status, 400);
    assert.match(greedy.body.description, /^OUT_OF_RANGE: /);
  });
});

import { accountOutstanding, inconsistentLoans } from '../../db/loans/servicing-reads';
import { workflowIds } from '../../workflows/ids';
import { loanStateQuery } from '../../workflows/loans/messages';
import { type Caller, type Reply, push, sendMoney, takeLoan } from './client-flows';
import type { Check, Scenario, World } from './handlers-world';

/**
 * The handlers suite's money scenarios: a loan's servicing Updates and repayment signals, an
 * offer's acceptances, and a push's and a payout's provider results (the simulators deliver each
 * callback n times at once in this suite).
 */

const LOAN = { amount: 100_000, collateral: 10_000, weeks: 4, deposit: 50_000 };
let keys = 0;
/** Idempotency keys that never meet another scenario's. */
const nextKey = () => (keys += 1);
const WAIVER = 100;
const REPAYMENT = 1_000;
const money = (value: number) => ({ value, currency: 'KES' });
const all = <T>(n: number, each: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => each(i)));
const not = (what: string, replies: Reply[], status: number) =>
  replies.filter((r) => r.status !== status).map((r) => `${what} answered ${r.status}: ${r.text.slice(0, 160)}`);

/** A borrower with a disbursed loan of LOAN, its run waiting on its first installment's day. */
async function borrowerWithLoan(world: World, key: string) {
  const borrower = await world.customer('borrower', LOAN.deposit);
  let applicationId = '';
  const taken = await takeLoan(
    world.api,
    borrower.caller,
    { organizationId: world.deployment.organizationId, ...LOAN, key },
    (id) => (applicationId = id),
  );
  if (taken.outcome !== 'DISBURSED') throw new Error(`the loan was not taken: ${taken.outcome}`);
  const row = await world.deployment.db('loan_applications').where({ id: applicationId }).first('loan_id');
  return { borrower, loanId: row.loan_id as string };
}

/**
 * loan: n waivers and n repayments at once, the run's days a second long (its DUE and OVERDUE
 * timers fire among them); once every repayment is allocated, n reversals of them and n more
 * waivers at once. A serial order of those gives: every waiver and reversal applied once, every
 * repayment allocated once and reversed once, what is owed lower by exactly the waivers, the
 * ledger equal to the schedule, and the run still going.
 */
export const loanServicing: Scenario = {
  type: 'loan',
  sends: 'waive and reverseRepayment Updates, repayment signals',
  async prepare(world) {
    const { borrower, loanId } = await borrowerWithLoan(world, `handlers-loan-${nextKey()}`);
    const { db, organizationId, temporal } = world.deployment;
    const owed = await accountOutstanding(db, organizationId, borrower.credit);
    const base = `/v1/accounts/${borrower.credit}/installments`;
    const waive = (tag: string) =>
      world.api.keyed(
        `${base}/waivers`,
        world.operator,
        { loan_id: loanId, amount: money(WAIVER), reason: `handlers ${tag}` },
        `${loanId}-${tag}`,
      );
    return {
      async send(n): Promise<Check> {
        const pushIds: string[] = [];
        const payer = (i: number) => `+25410${String(nextKey()).padStart(5, '0')}${i % 10}0`.slice(0, 13);
        const payers = Array.from({ length: n }, (_, i) => payer(i));
        const [waived, repaid] = await Promise.all([
          all(n, (i) => waive(`a${i}`)),
          all(n, (i) =>
            push(
              world.api,
              borrower.caller,
              {
                account: borrower.credit,
                credit: true,
                phone: payers[i]!,
                amount: REPAYMENT,
                key: `${loanId}-r${i}`,
              },
              (id) => (pushIds[i] = id),
            ),
          ),
        ]);
        // What was allocated is reversed; a push that never reached the payer (the worker died
        // before sending it: FAILED NO_RESULT) is no repayment, as long as nothing was collected.
        const allocated = pushIds.filter((_, i) => repaid[i]!.outcome === 'POSTED allocated');
        const [reversed, waivedAgain] = await Promise.all([
          all(allocated.length, (i) =>
            world.api.keyed(
              `${base}/transactions/${allocated[i]}/reversal`,
              world.operator,
              { reason: 'handlers' },
              `${loanId}-v${i}`,
            ),
          ),
          all(n, (i) => waive(`b${i}`)),
        ]);
        return async () => {
          const problems = [...not('a waiver', [...waived, ...waivedAgain], 201), ...not('a reversal', reversed, 201)];
          for (const [i, r] of repaid.entries())
            if (
              r.outcome !== 'POSTED allocated' &&
              (r.outcome !== 'FAILED NO_RESULT' || (await collected(world, payers[i]!)))
            )
              problems.push(`a repayment ended ${r.outcome} (${pushIds[i] ?? 'not started'})`);
          // The account's events (its one loan): a repayment allocated by its push's run names no loan.
          const events = await db('loan_transactions').where({
            organization_id: organizationId,
            account_id: borrower.credit,
          });
          const of = (kind: string) => events.filter((e) => e.kind === kind);
          const reversals = await db('loan_transactions').whereIn(
            'reverses_id',
            of('REPAYMENT').map((e) => e.id as string),
          );
          const m = allocated.length;
          if (of('WAIVER').length !== 2 * n) problems.push(`${of('WAIVER').length} waivers recorded, not ${2 * n}`);
          if (of('REPAYMENT').length !== m) problems.push(`${of('REPAYMENT').length} repayments allocated, not ${m}`);
          if (reversals.length !== m) problems.push(`${reversals.length} reversals recorded, not ${m}`);
          // What is owed: as before, less the waivers, plus the penalties its late days charged.
          // Both read in one snapshot: the run goes on charging (a period every 7 s here), and a
          // charge landing between two separate reads would look like money owed from nowhere.
          const { penalties, now } = await db.transaction(
            async (trx) => {
              const charged = await trx('loan_penalty_charges')
                .where({ organization_id: organizationId, loan_id: loanId })
                .sum({ total: 'amount' })
                .first();
              return {
                penalties: Number(charged?.total ?? 0),
                now: await accountOutstanding(trx, organizationId, borrower.credit),
              };
            },
            { isolationLevel: 'repeatable read' },
          );
          if (now !== owed - 2 * n * WAIVER + penalties)
            problems.push(`owes ${now}, not ${owed} - ${2 * n} waivers + ${penalties} penalties`);
          if ((await inconsistentLoans(db)).some((l) => l.loan_id === loanId)) problems.push('ledger ≠ schedule');
          const state = await temporal.workflow.getHandle(workflowIds.loan(loanId)).query(loanStateQuery);
          if (state.closed) problems.push('the run closed the loan');
          return problems;
        };
      },
    };
  },
};

/** loanApplication: n acceptances of one offer at once, each its own key: one loan, the others refused. */
export const offerAcceptance: Scenario = {
  type: 'loanApplication',
  sends: 'acceptOffer Updates',
  async prepare(world) {
    const customer = await world.customer('borrower', LOAN.deposit);
    const { db, organizationId } = world.deployment;
    const offer = await world.api.call('POST', `/v1/accounts/loan/applications/${organizationId}`, customer.caller, {
      json: {},
    });
    if (offer.status !== 201) throw new Error(`no offer: ${offer.status} ${offer.text}`);
    const applicationId = String(offer.body.id);
    return {
      async send(n): Promise<Check> {
        const answers = await all(n, (i) =>
          world.api.keyed(
            '/v1/accounts/loan/applications/partner-b',
            customer.caller,
            {
              application_id: applicationId,
              loan_amount: LOAN.amount,
              tenure: { duration: LOAN.weeks, unit: 'WEEKS' },
              collateral_amount: LOAN.collateral,
            },
            `${applicationId}-${i}`,
          ),
        );
        return async () => {
          const problems: string[] = [];
          const taken = answers.filter((a) => a.status === 200);
          if (taken.length !== 1) problems.push(`${taken.length} acceptances answered 200, not 1`);
          for (const a of answers)
            if (a.status !== 200 && (a.status < 400 || a.status >= 500))
              problems.push(`answered ${a.status}: ${a.text}`);
          const loans = await db('loans').where({ organization_id: organizationId, application_id: applicationId });
          if (loans.length !== 1) problems.push(`${loans.length} loans made, not 1`);
          const held = await db('journal_entries').whereIn(
            'transaction_id',
            loans.map((l) => l.id as string),
          );
          const kinds = held.map((e) => e.kind as string).sort();
          if (kinds.filter((k) => k === 'COLLATERAL_HOLD').length !== 1) problems.push(`entries ${kinds.join(',')}`);
          if (kinds.filter((k) => k === 'DISBURSEMENT').length !== 1) problems.push(`entries ${kinds.join(',')}`);
          return problems;
        };
      },
    };
  },
};

/** Whether the mobile-money simulator collected a push from `phone` (a paid, final push). */
async function collected(world: World, phone: string): Promise<boolean> {
  const response = await fetch(`${world.deployment.simulators.mobileMoney}/_control/pushes`);
  const pushes = (await response.json()) as { phone: string; state: string; resultCode: number | string }[];
  return pushes.some((p) => p.phone === phone.slice(1) && p.state === 'final' && String(p.resultCode) === '0');
}

/** Whether the mobile-money simulator paid a payout to `phone` (a completed B2C payment). */
async function paidOut(world: World, phone: string): Promise<boolean> {
  const response = await fetch(`${world.deployment.simulators.mobileMoney}/_control/b2c`);
  const payments = (await response.json()) as { phone: string; state: string; resultCode: number | string }[];
  return payments.some((p) => p.phone === phone.slice(1) && p.state === 'completed' && String(p.resultCode) === '0');
}

/** The money a transaction moved, by journal kind (a push: COLLECTION; a payout: its own). */
async function entryKinds(world: World, transactionId: string): Promise<string[]> {
  const rows = await world.deployment.db('journal_entries').where({ transaction_id: transactionId });
  return rows.map((r) => r.kind as string).sort();
}

/**
 * A transaction moved once: POSTED, and each of its journal kinds once; or, for a push or payout
 * the dead worker never sent, FAILED NO_RESULT with nothing moved at the provider either.
 */
async function movedOnce(world: World, outcome: string, id: string | undefined, moved: () => Promise<boolean>) {
  if (outcome === 'FAILED NO_RESULT' && id)
    return (await moved()) ? [`FAILED NO_RESULT here, yet the provider moved the money (${id})`] : [];
  if (outcome !== 'POSTED' || !id) return [`ended ${outcome} (${id ?? 'not started'})`];
  const kinds = await entryKinds(world, id);
  return new Set(kinds).size === kinds.length && kinds.length > 0 ? [] : [`journal entries ${kinds.join(',')}`];
}

/** stkPush: one push whose provider result arrives n times at once: POSTED, collected once. */
export const pushResults: Scenario = {
  type: 'stkPush',
  sends: 'provider result callbacks (the STK result signal)',
  async prepare(world) {
    const customer = await world.customer('borrower');
    return {
      async send(): Promise<Check> {
        let id: string | undefined;
        const ended = await push(
          world.api,
          customer.caller,
          {
            account: customer.current,
            credit: false,
            phone: customer.phone,
            amount: 10_000,
            key: `push-${customer.id}`,
          },
          (started) => (id = started),
        );
        return () => movedOnce(world, ended.outcome, id, () => collected(world, customer.phone));
      },
    };
  },
};

/** sendMoney: one payout whose B2C result arrives n times at once: POSTED, paid out once. */
export const payoutResults: Scenario = {
  type: 'sendMoney',
  sends: 'B2C result callbacks (the payout result signal)',
  async prepare(world) {
    const customer = await world.customer('borrower', 1_000_000);
    const caller: Caller = customer.caller;
    return {
      async send(): Promise<Check> {
        let id: string | undefined;
        const ended = await sendMoney(
          world.api,
          caller,
          { account: customer.current, phone: customer.phone, amount: 50_000, key: `payout-${customer.id}` },
          (started) => (id = started),
        );
        return () => movedOnce(world, ended.outcome, id, () => paidOut(world, customer.phone));
      },
    };
  },
};

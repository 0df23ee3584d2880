import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { installmentDueDays } from '../../db/loans/loans';
import { penaltyTermsOf } from '../../db/loans/penalties';
import { accountOutstanding, inconsistentLoans } from '../../db/loans/servicing-reads';
import { DEMO } from '../../db/seeds/demo';
import type { LoanInput } from '../../workflows/loans/messages';
import { harness } from './harness';
import { call, type Reply } from './http';
import { fund, money, newCustomer, payerNumber, settled, stkPush, until } from './money';

/**
 * A fresh borrower of the demo organization: a customer taken through KYC and activation (the
 * current account ACTIVE at the bank) unless told `kyc: 'none'` (signed up only), and money in
 * the current account for collateral.
 */
export async function newBorrower(
  options: { kyc?: 'APPROVED' | 'none'; funds?: number; status?: 'WAITING_LIST' } = {},
) {
  const customer = await newCustomer(0, { stage: options.kyc === 'none' ? 'new' : 'active' });
  const { db } = harness();
  if (options.status) await db('users').where({ id: customer.user.id }).update({ status: options.status });
  if ((options.funds ?? 500_000) > 0) await fund(customer.current, options.funds ?? 500_000);
  return customer;
}

export const offerFor = (
  headers: Record<string, string>,
  path = `/v1/accounts/loan/applications/${DEMO.organizations.demo.id}`,
  json: unknown = {},
) => call('POST', path, { headers, json });

export const applyPartnerB = (
  headers: Record<string, string>,
  body: {
    application_id: string;
    loan_amount: number;
    tenure: { duration: number; unit: string };
    collateral_amount: number;
  },
  idempotencyKey?: string,
): Promise<Reply> =>
  call('POST', '/v1/accounts/loan/applications/partner-b', {
    headers: { ...headers, ...(idempotencyKey && { 'Idempotency-Key': idempotencyKey }) },
    json: body,
  });

/** The loan an offer became. */
export async function loanOf(applicationId: string): Promise<string> {
  const row = await harness().db('loan_applications').where({ id: applicationId }).first('loan_id');
  assert.ok(row?.loan_id, `application ${applicationId} has no loan`);
  return row.loan_id as string;
}

/** A product of the demo organization for one test, the standard one's terms with `overrides`. */
export async function testProduct(overrides: Record<string, unknown>): Promise<string> {
  const { db } = harness();
  const code = `t-${randomUUID().slice(0, 8)}`;
  const {
    id: _id,
    created_at: _created,
    ...standard
  } = await db('loan_products').where({ organization_id: DEMO.organizations.demo.id, code: 'standard' }).first();
  await db('loan_products').insert({ ...standard, code, name: `Test ${code}`, ...overrides });
  return code;
}

/** Takes an offer on `product` (standard unless told) and waits for the disbursed loan. */
export async function takeLoan(
  borrower: { headers: Record<string, string> },
  taken: { product?: string; amount: number; tenure: number; unit?: 'WEEKS' | 'DAYS'; collateral?: number },
) {
  const offer = await offerFor(borrower.headers, undefined, taken.product ? { product: taken.product } : {});
  assert.equal(offer.status, 201, offer.text);
  const applied = await applyPartnerB(borrower.headers, {
    application_id: offer.body.id,
    loan_amount: taken.amount,
    tenure: { duration: taken.tenure, unit: taken.unit ?? 'WEEKS' },
    collateral_amount: taken.collateral ?? Math.ceil(taken.amount / 10),
  });
  assert.equal(applied.status, 200, applied.text);
  return { offer: offer.body, applied: applied.body, loanId: await loanOf(offer.body.id) };
}

/** What a disbursed loan's run starts from, its days `dayMs` long (a test moves the run to a worker of its own). */
export async function loanRunInput(loanId: string, dayMs: number): Promise<LoanInput> {
  const { db } = harness();
  const organizationId = DEMO.organizations.demo.id;
  const loan = await db('loans').where({ organization_id: organizationId, id: loanId }).first();
  return {
    organizationId,
    loanId,
    anchorMs: Math.floor(loan.disbursed_at.getTime() / dayMs) * dayMs,
    dayMs,
    installments: await installmentDueDays(db, organizationId, loanId),
    penalty: (await penaltyTermsOf(db, organizationId, loanId))!,
  };
}

/**
 * A repayment: a push on the borrower's credit account from any payer number, POSTED, then
 * allocated (its event recorded). Answers the push's transaction.
 */
export async function repay(
  borrower: { headers: Record<string, string>; credit: string },
  amount: number,
  options: { idempotencyKey?: string } = {},
) {
  const pushed = await stkPush(
    borrower.headers,
    { account_id: borrower.credit, amount: money(amount), mobile_number: payerNumber(0) },
    options.idempotencyKey,
  );
  assert.equal(pushed.status, 201, pushed.text);
  const posted = await settled(borrower.headers, pushed.body.id);
  assert.equal(posted.status, 'POSTED', JSON.stringify(posted));
  await allocated(pushed.body.id);
  return posted;
}

/** Waits until a posted repayment has been allocated (its event exists). */
export function allocated(transactionId: string, timeoutMs = 20_000) {
  return until(
    `repayment ${transactionId} allocated`,
    async () => (await harness().db('loan_transactions').where({ id: transactionId }).first()) !== undefined,
    timeoutMs,
  );
}

/** Every disbursed loan whose ledger balance differs from its schedule's outstanding total (none expected). */
export const ledgerMismatches = () => inconsistentLoans(harness().db);

/** Repays everything the credit account owes (rounded up to the shilling), again if a penalty fell due meanwhile. */
export async function repayAll(borrower: { headers: Record<string, string>; credit: string }) {
  const { db } = harness();
  for (let attempt = 0; attempt < 3; attempt++) {
    const owed = await accountOutstanding(db, DEMO.organizations.demo.id, borrower.credit);
    if (owed === 0) return;
    await repay(borrower, Math.ceil(owed / 100) * 100);
  }
  assert.fail('still owing after three repayments');
}

/** A credit account's schedule as GET installments answers it. */
export const installmentsOf = async (headers: Record<string, string>, account: string) => {
  const reply = await call('GET', `/v1/accounts/${account}/installments`, { headers });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.data as {
    id: string;
    position: number;
    status: string;
    outstanding: { principal: number; interest: number; penalties: number; total: number };
  }[];
};

/** A loan's status as stored, and a wait until it is REPAID. */
export const loanStatus = async (loanId: string) => (await harness().db('loans').where({ id: loanId }).first()).status;
export const repaid = (loanId: string) =>
  until(`loan ${loanId} repaid`, async () => (await loanStatus(loanId)) === 'REPAID', 20_000);

/**
 * Waits until a run has taken `count` signals named `name`: a workflow task started after the
 * last of them and completed (a signal that arrives during a task waits for the next one).
 */
export function signalsTaken(handle: WorkflowHandle, name: string, count: number) {
  return until(`the run took ${count} ${name} signal(s)`, async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    const signals = events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name);
    if (signals.length < count) return false;
    const after = events.slice(events.indexOf(signals.at(-1)!));
    const started = after.findIndex((e) => e.workflowTaskStartedEventAttributes);
    return started > 0 && after.slice(started).some((e) => e.workflowTaskCompletedEventAttributes);
  });
}

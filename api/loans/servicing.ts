import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import { findAccountOwner } from '../../db/accounts/accounts';
import { activeLoansPaidBy, type EventItem, findAccountEvent, findAccountLoan } from '../../db/loans/transactions';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { Permission } from '../../domain/rbac';
import { LoanServicingError } from '../../workflows/loans/messages';
import type { Caller } from '../auth/caller';
import type { Needs } from '../deps';
import { IdempotencyKeyHeader, idempotentExecutionId } from '../middleware/idempotency';
import { Money, Transaction } from '../mobile-money/views';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { InstallmentAllocation } from './transactions';
import type { LoanServicingWorkflows, ServicingAnswer } from './workflows';

/** Operators of the lender (admins, operations staff) and its organization keys with loans.service. */
const OPERATOR: RouteAuth = { schemes: ['user', 'api_key'], permission: Permission.LOANS_SERVICE };
const Reason = z
  .string()
  .trim()
  .min(1)
  .max(500)
  .meta({ description: 'Why, for the audit trail (1 to 500 characters)' });
/** A waiver is capped only by what is waivable: a retried request must be recognised, so the key is required. */
const RequiredIdempotencyHeader = z.object({
  'idempotency-key': z.string().min(1).max(255).meta({ description: 'Required: a retried waiver is the same waiver' }),
});
const Corrected = z.strictObject({ transaction: Transaction, installments: z.array(InstallmentAllocation) });

const REFUSALS = {
  BAD_REQUEST:
    'the description starting with why: LOAN_CLOSED (a loan concerned is repaid: its history is final), NOTHING_ALLOCATED ' +
    '(the repayment paid no installment: it was all overpayment), OVER_WAIVABLE (more than the penalties and interest outstanding)',
  NOT_FOUND: "no such account, repayment or loan in the caller's organization",
};

/**
 * Operators' corrections to a lending account (extensions, spec 2: "reversals and waivers are
 * separate transaction events"): each is an Update on the loan's run, which writes a new event
 * with its own allocation records offsetting or settling amounts, never changing a record.
 */
export function loanServicingRoutes(deps: Needs<'db'>, workflows: LoanServicingWorkflows): AnyRoute[] {
  const { db } = deps;

  async function accountOf(ctx: Context, accountId: string): Promise<string> {
    const caller = ctx.state.caller as Caller;
    const account = caller.organizationId ? await findAccountOwner(db, caller.organizationId, accountId) : undefined;
    if (!account) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such account');
    return caller.organizationId!;
  }
  const by = (ctx: Context) => {
    const caller = ctx.state.caller as Caller;
    return caller.scheme === 'user' ? `user:${caller.userId}` : `${caller.scheme}:${caller.id}`;
  };
  /** The run's answer: the event booked, or its refusal naming the field it is about (`fieldOf`). */
  async function answer(
    ctx: Context,
    organizationId: string,
    accountId: string,
    outcome: ServicingAnswer,
    fieldOf: (refused: string) => string,
  ) {
    if ('refused' in outcome) {
      if (outcome.refused === LoanServicingError.NOT_FOUND)
        throw new ServiceError(ErrorCode.NOT_FOUND, outcome.message);
      throw new ServiceError(ErrorCode.BAD_REQUEST, `${outcome.refused}: ${outcome.message}`, [
        { path: fieldOf(outcome.refused), reason: outcome.message, sub_code: outcome.refused },
      ]);
    }
    const event = await findAccountEvent(db, organizationId, accountId, outcome.eventId);
    if (!event) throw new Error(`event ${outcome.eventId} is not on account ${accountId}`);
    answerEvent(ctx, event);
  }
  /** The event as the account list shows it, written with the event (parsed: the idempotency store keeps objects). */
  function answerEvent(ctx: Context, event: EventItem) {
    ctx.status = 201;
    ctx.body = JSON.parse(event.view) as unknown;
  }

  /**
   * The same keyed request again after its first answer was lost: the event its first execution
   * booked (its id is the execution's), answered as then, whatever the loan's state now (a waiver
   * that repaid the loan closed its run, which would refuse the request as LOAN_CLOSED).
   */
  async function answerBooked(ctx: Context, organizationId: string, accountId: string, kind: string) {
    const executionId = idempotentExecutionId(ctx);
    const booked = executionId ? await findAccountEvent(db, organizationId, accountId, executionId) : undefined;
    if (booked?.kind !== kind) return false;
    answerEvent(ctx, booked);
    return true;
  }

  return [
    defineRoute({
      method: 'post',
      path: '/v1/accounts/{accountId}/installments/transactions/{transactionId}/reversal',
      operationId: 'reverseRepayment',
      summary: "Reverse a repayment's allocations (operators)",
      description:
        'A REVERSAL transaction whose allocation records offset the repayment’s (negative amounts, effect REVERSED), the ' +
        'installments owing again and the money recorded as owed back to the payer (payable:repayment-reversals). At most ' +
        'once per repayment: asking again answers the same reversal. An overpayment the repayment credited to the current ' +
        'account stays there. Refused once a loan it paid is repaid.',
      tags: ['loans'],
      extension: true,
      auth: OPERATOR,
      idempotent: true,
      request: {
        headers: IdempotencyKeyHeader,
        params: z.object({ accountId: z.uuid(), transactionId: z.uuid() }),
        body: z.strictObject({ reason: Reason }),
      },
      responses: { 201: { description: 'The reversal and its offsetting records', schema: Corrected } },
      errors: REFUSALS,
      async handler(ctx, { params, body }) {
        const organizationId = await accountOf(ctx, params.accountId);
        const repayment = await findAccountEvent(db, organizationId, params.accountId, params.transactionId);
        if (!repayment || repayment.kind !== 'REPAYMENT')
          throw new ServiceError(ErrorCode.NOT_FOUND, 'No such repayment');
        if (await answerBooked(ctx, organizationId, params.accountId, 'REVERSAL')) return;
        const [loanId] = await activeLoansPaidBy(db, organizationId, repayment.id);
        const outcome: ServicingAnswer = loanId
          ? await workflows.reverseRepayment(loanId, {
              reversalId: idempotentExecutionId(ctx) ?? randomUUID(),
              resourceId: `trx_${randomBytes(12).toString('base64url')}`,
              repaymentId: repayment.id,
              reason: body.reason,
              by: by(ctx),
            })
          : !repayment.allocated
            ? { refused: LoanServicingError.NOTHING_ALLOCATED, message: 'The repayment paid no installment' }
            : { refused: LoanServicingError.LOAN_CLOSED, message: 'The loans the repayment paid are repaid' };
        await answer(ctx, organizationId, params.accountId, outcome, () => 'path.transactionId');
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/accounts/{accountId}/installments/waivers',
      operationId: 'waiveLoanAmounts',
      summary: "Waive part of a loan's penalties and interest (operators)",
      description:
        'A WAIVER transaction that settles penalties, then interest, oldest installment first (never principal), with WAIVED ' +
        'allocation records and the forgiven amount charged to expense:loan-waivers. A waiver that leaves nothing owed closes ' +
        'the loan. Idempotency-Key is required (a retried waiver is the same waiver).',
      tags: ['loans'],
      extension: true,
      auth: OPERATOR,
      idempotent: true,
      request: {
        headers: RequiredIdempotencyHeader,
        params: z.object({ accountId: z.uuid() }),
        body: z.strictObject({ loan_id: z.uuid(), amount: Money, reason: Reason }),
      },
      responses: { 201: { description: 'The waiver and its records', schema: Corrected } },
      errors: REFUSALS,
      async handler(ctx, { params, body }) {
        const organizationId = await accountOf(ctx, params.accountId);
        const loan = await findAccountLoan(db, organizationId, params.accountId, body.loan_id);
        if (!loan) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such loan on the account');
        if (body.amount.currency !== loan.currency)
          throw new ServiceError(ErrorCode.BAD_REQUEST, `The loan is in ${loan.currency}`, [
            {
              path: 'body.amount.currency',
              reason: `The loan is in ${loan.currency}`,
              sub_code: SubCode.INVALID_VALUE,
            },
          ]);
        if (await answerBooked(ctx, organizationId, params.accountId, 'WAIVER')) return;
        const outcome = await workflows.waive(loan.id, {
          waiverId: idempotentExecutionId(ctx) ?? randomUUID(),
          resourceId: `trx_${randomBytes(12).toString('base64url')}`,
          amount: body.amount.value,
          reason: body.reason,
          by: by(ctx),
        });
        await answer(ctx, organizationId, params.accountId, outcome, (refused) =>
          refused === LoanServicingError.OVER_WAIVABLE ? 'body.amount.value' : 'body.loan_id',
        );
      },
    }),
  ];
}

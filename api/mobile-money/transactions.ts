import { z } from 'zod';
import { accountBalance } from '../../db/ledger/ledger';
import { accountOutstanding } from '../../db/loans/servicing-reads';
import { findTransactionWithOwner } from '../../db/mobile-money/transactions';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { feeFor, MINOR_PER_SHILLING } from '../../domain/mobile-money/transactions';
import { Permission } from '../../domain/rbac';
import type { Caller } from '../auth/caller';
import { IdempotencyKeyHeader } from '../middleware/idempotency';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { Money, Transaction, transactionView } from './views';
import { moneyMovements, movementRefusal } from './movements';
import type { MobileMoneyWorkflows } from './workflows';

const MoneyMovement = z.strictObject({
  account_id: z.uuid(),
  amount: Money,
  mobile_number: z
    .string()
    .regex(/^\+[1-9]\d{7,14}$/)
    .meta({
      description:
        'International format with the leading plus and country code; the provider carries Kenyan mobile numbers (+2547…, +2541…)',
    }),
});

const PAYER: RouteAuth = { schemes: ['user'], permission: Permission.TRANSACTIONS_WRITE, refuseWaitingList: true };
/** What both money-moving POSTs share: the payer, Idempotency-Key, the body, a 201 with the transaction. */
const MONEY_MOVEMENT = {
  tags: ['transactions'],
  auth: PAYER,
  idempotent: true as const,
  request: { headers: IdempotencyKeyHeader, body: MoneyMovement },
  responses: { 201: { description: 'The transaction, PENDING', schema: Transaction } },
  errors: {
    BAD_REQUEST:
      'no such active account of the caller (a current account not activated yet: ACCOUNT_NOT_ACTIVATED), another currency, an amount that is not a whole number of shillings or over the limit, a number the provider does not carry, ' +
      "a deposit from a number other than the owner's, a repayment on a credit account that owes nothing (NOTHING_OWED) or above what it owes " +
      '(OVER_OUTSTANDING), a payout from a credit account, or an available balance short of the amount and fee (INSUFFICIENT_FUNDS)',
  },
};
const READER: RouteAuth = {
  schemes: ['user', 'partner', 'api_key'],
  permission: Permission.ACCOUNTS_READ,
  refuseWaitingList: true,
};

const badField = movementRefusal;

export function transactionRoutes(
  deps: Needs<'db' | 'clock', 'MOBILE_MONEY_SHORT_CODE' | 'MOBILE_MONEY_TILL_NUMBER'>,
  workflows: MobileMoneyWorkflows,
): AnyRoute[] {
  const { db } = deps;
  const { checkMovement, create, resumed, accept } = moneyMovements(deps);

  return [
    defineRoute({
      method: 'post',
      path: '/v1/transactions/mobilemoney/stk-push',
      operationId: 'createStkPush',
      summary: 'Collect money from a phone through a push prompt',
      description:
        "Current-account deposits must come from the account owner's registered number; credit-account repayments from any payer number. " +
        'Answers 201 with the PENDING transaction; follow it with GET /v1/transactions/{id} until POSTED or FAILED.',
      ...MONEY_MOVEMENT,
      async handler(ctx, { body }) {
        if (await resumed(ctx, workflows.startStkPush)) return;
        const caller = ctx.state.caller as Caller;
        const account = await checkMovement(caller, body);
        if (account.type === 'CURRENT' && account.owner_phone !== body.mobile_number) {
          throw badField(
            'body.mobile_number',
            "Current-account deposits must come from the account owner's registered number",
            SubCode.NOT_ALLOWED,
          );
        }
        // A push on a credit account is a loan repayment once posted (allocated by the loan's run):
        // at most what is owed, rounded up to the shilling the provider moves.
        const repayment = account.type === 'CREDIT';
        if (repayment) {
          const owed = await accountOutstanding(db, account.organization_id, account.id);
          if (owed === 0)
            throw badField(
              'body.account_id',
              'NOTHING_OWED: no loan on the credit account owes anything',
              SubCode.NOT_ALLOWED,
            );
          const most = Math.ceil(owed / MINOR_PER_SHILLING) * MINOR_PER_SHILLING;
          if (body.amount.value > most)
            throw badField('body.amount.value', `OVER_OUTSTANDING: at most ${most} is owed`, SubCode.OUT_OF_RANGE);
        }
        await accept(ctx, await create(ctx, account, 'STK_PUSH', body), workflows.startStkPush, repayment);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/transactions/mobilemoney/send-money',
      operationId: 'createSendMoney',
      summary: 'Send money from a current account to a phone (B2C)',
      description:
        'The amount and its fee are held (the available balance is checked), sent through B2C, then posted or released. ' +
        'Answers 201 with the PENDING transaction; 400 when the available balance cannot cover amount and fee.',
      ...MONEY_MOVEMENT,
      async handler(ctx, { body }) {
        if (await resumed(ctx, workflows.startSendMoney)) return;
        const caller = ctx.state.caller as Caller;
        const account = await checkMovement(caller, body);
        if (account.type !== 'CURRENT')
          throw badField('body.account_id', 'Money is sent from a current account', SubCode.NOT_ALLOWED);
        // Checked again under a lock when the workflow holds the money; this answers the common case at once.
        const { available } = await accountBalance(db, account.id);
        if (available < body.amount.value + feeFor('SEND_MONEY', body.amount.value))
          throw badField(
            'body.amount.value',
            'INSUFFICIENT_FUNDS: the available balance does not cover the amount and its fee',
          );
        await accept(ctx, await create(ctx, account, 'SEND_MONEY', body), workflows.startSendMoney);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/transactions/{id}',
      operationId: 'getTransaction',
      summary: 'One transaction (by id or resource_id), to follow a push prompt or payout to POSTED or FAILED',
      description:
        "Not shown in the spec. A customer reads their own accounts' transactions; organization keys and partners their organization's.",
      tags: ['transactions'],
      extension: true,
      auth: READER,
      request: {
        params: z.object({
          id: z
            .union([z.uuid(), z.string().regex(/^trx_[A-Za-z0-9_-]{1,64}$/)])
            .meta({ description: 'The transaction id (uuid) or its resource_id (trx_…)' }),
        }),
      },
      responses: { 200: { description: 'The transaction', schema: Transaction } },
      errors: {
        NOT_FOUND: "no such transaction visible to the caller (another customer's or organization's included)",
      },
      async handler(ctx, { params }) {
        const caller = ctx.state.caller as Caller;
        // The transaction and its account's owner in one read, within the caller's organization: clients poll this until POSTED.
        const row = await findTransactionWithOwner(db, caller.organizationId, params.id);
        const visible = row && (caller.scheme !== 'user' || row.owner_id === caller.userId);
        if (!row || !visible) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such transaction');
        ctx.body = transactionView(row);
      },
    }),
  ];
}

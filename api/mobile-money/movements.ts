import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import {
  createTransaction,
  findOwnAccount,
  findTransactionWithOwner,
  type MovementAccountRow,
  type TransactionRow,
  withdrawUnstarted,
} from '../../db/mobile-money/transactions';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { isKenyanMobile } from '../../domain/identifiers';
import {
  feeFor,
  MAX_AMOUNT_MINOR,
  MINOR_PER_SHILLING,
  type TransactionType,
} from '../../domain/mobile-money/transactions';
import type { Caller } from '../auth/caller';
import type { Needs } from '../deps';
import { idempotentExecutionId } from '../middleware/idempotency';
import { transactionView } from './views';
import type { MoneyMovement as Movement } from './workflows';

/** What a push or payout request carries (the routes' MoneyMovement body). */
type MovementBody = { account_id: string; amount: { value: number; currency: string }; mobile_number: string };

/** A refusal of one field of a money movement, in the plain shape. */
export const movementRefusal = (path: string, reason: string, subCode: string = SubCode.INVALID_VALUE) =>
  new ServiceError(ErrorCode.BAD_REQUEST, reason, [{ path, reason, sub_code: subCode }]);
const badField = movementRefusal;

/**
 * What the push and payout routes share: checking the movement, storing its PENDING transaction
 * (its id from the Idempotency-Key when keyed), resuming a keyed request that already made one,
 * and starting its workflow.
 */
export function moneyMovements(deps: Needs<'db' | 'clock', 'MOBILE_MONEY_SHORT_CODE' | 'MOBILE_MONEY_TILL_NUMBER'>) {
  const { db, config, clock } = deps;

  /** The caller's own active account, and an amount the provider can carry in its currency. */
  async function checkMovement(caller: Caller, body: MovementBody): Promise<MovementAccountRow> {
    const account =
      caller.scheme === 'user'
        ? await findOwnAccount(db, caller.organizationId, caller.userId, body.account_id)
        : undefined;
    if (!account) throw badField('body.account_id', 'No such account of the caller');
    if (account.status === 'PENDING_ACTIVATION')
      throw badField(
        'body.account_id',
        'ACCOUNT_NOT_ACTIVATED: the current account is not activated yet; activate it first (POST /v1/user/accounts/current/activation)',
        'ACCOUNT_NOT_ACTIVATED',
      );
    if (account.status !== 'ACTIVE') throw badField('body.account_id', `The account is ${account.status}`);
    if (body.amount.currency !== account.currency)
      throw badField('body.amount.currency', `The account is in ${account.currency}`);
    if (body.amount.value % MINOR_PER_SHILLING !== 0)
      throw badField('body.amount.value', 'The provider moves whole shillings: the value must be a multiple of 100');
    if (body.amount.value > MAX_AMOUNT_MINOR)
      throw badField('body.amount.value', `At most ${MAX_AMOUNT_MINOR} per transaction`, SubCode.OUT_OF_RANGE);
    if (!isKenyanMobile(body.mobile_number))
      throw badField(
        'body.mobile_number',
        'The provider carries Kenyan mobile numbers only (+2547… or +2541…)',
        SubCode.INVALID_FORMAT,
      );
    return account;
  }

  /**
   * Stores the PENDING transaction. Under an Idempotency-Key its id comes from the key, so an
   * execution repeated after a crash or a lost answer finds the transaction it created (and its
   * workflow, whose id is the transaction's) rather than moving the money a second time.
   */
  async function create(
    ctx: Context,
    account: MovementAccountRow,
    type: TransactionType,
    body: MovementBody,
  ): Promise<TransactionRow> {
    const id = idempotentExecutionId(ctx) ?? randomUUID();
    const resourceId = `trx_${randomBytes(12).toString('base64url')}`;
    const details =
      type === 'SEND_MONEY'
        ? { type: 'B2C', direction: 'PAYOUT', account_id: account.id }
        : config.MOBILE_MONEY_TILL_NUMBER
          ? {
              type: 'BUY_GOODS',
              direction: 'COLLECTION',
              account_id: account.id,
              till_number: config.MOBILE_MONEY_TILL_NUMBER,
              account_reference: resourceId.slice(-12),
            }
          : {
              type: 'PAYBILL',
              direction: 'COLLECTION',
              account_id: account.id,
              paybill_number: config.MOBILE_MONEY_SHORT_CODE,
              account_reference: resourceId.slice(-12),
            };
    return createTransaction(db, account.organization_id, {
      id,
      resource_id: resourceId,
      account_id: account.id,
      type,
      amount: body.amount.value,
      fee_amount: feeFor(type, body.amount.value),
      currency: account.currency,
      mobile_number: body.mobile_number,
      details,
      callback_token: randomBytes(24).toString('base64url'),
      transacted_at: clock.now(),
    });
  }

  /**
   * A keyed request executed again (its first execution died or its answer was not stored) that
   * already created its transaction: answered with it, its workflow started if it was not, and
   * nothing checked again (the held money no longer counts as available, for one).
   */
  async function resumed(ctx: Context, start: (transaction: Movement) => Promise<void>): Promise<boolean> {
    const id = idempotentExecutionId(ctx);
    const caller = ctx.state.caller as Caller;
    const row = id === undefined ? undefined : await findTransactionWithOwner(db, caller.organizationId, id);
    if (row) await accept(ctx, row, start, row.account_type === 'CREDIT');
    return row !== undefined;
  }

  /**
   * Starts the transaction's workflow and answers 201 with it, PENDING. When the start fails
   * (Temporal down), a keyed request keeps its transaction: the client's retry with the same key
   * names the same id, finds it and starts its run (withdrawing it could strand the retry behind
   * a run that did start and then found nothing). An unkeyed one cannot be retried into it, so it
   * is withdrawn and the error answer leaves nothing behind, unless its run has begun regardless
   * (the start reached Temporal before its answer was lost): then it is accepted after all.
   */
  async function accept(
    ctx: Context,
    row: TransactionRow,
    start: (transaction: Movement) => Promise<void>,
    repayment = false,
  ) {
    try {
      await start({ transactionId: row.id, organizationId: row.organization_id, accountId: row.account_id, repayment });
    } catch (error) {
      if (idempotentExecutionId(ctx) !== undefined || (await withdrawUnstarted(db, row.organization_id, row)))
        throw error;
    }
    ctx.status = 201;
    ctx.set('Location', `/v1/transactions/${row.id}`);
    ctx.body = transactionView(row);
  }

  return { checkMovement, create, resumed, accept };
}

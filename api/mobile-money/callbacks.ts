import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  claimCallbackSignal,
  type MobileMoneyCallbackRecord,
  noteQueueTimeout,
  returnCallbackSignal,
  storeMobileMoneyCallback,
} from '../../db/mobile-money/callbacks';
import {
  checkoutRequestTaken,
  findTransaction,
  receiptTaken,
  type TransactionRow,
} from '../../db/mobile-money/transactions';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { isUuid } from '../../domain/identifiers';
import {
  type Assessment,
  assessPayoutResult,
  assessPushCallback,
  MAX_CALLBACK_SIGNALS,
  MAX_EARLY_CALLBACK_SIGNALS,
  RECEIPT,
} from '../../domain/mobile-money/callbacks';
import { FINAL_STATUSES } from '../../domain/mobile-money/transaction';
import { MalformedCallbackError, parseB2cResult, parseStkCallback } from '../../providers/mobile-money/callbacks';
import type { AppDeps } from '../deps';
import type { HttpMetrics } from '../metrics';
import { type AnyRoute, defineRoute } from '../route';
import type { MobileMoneyWorkflows } from './workflows';

const Acknowledged = z
  .object({ ResultCode: z.number().int(), ResultDesc: z.string() })
  .meta({ id: 'MobileMoneyCallbackAck' });
const CallbackAddress = z.object({ id: z.string().max(64), token: z.string().max(64) });

/**
 * What was done with a callback (stored with it; the README lists them):
 * - SIGNALLED: complete and consistent, handed to the run as the result;
 * - CONFIRMING: handed to the run as a trigger: it asks the provider's status query now;
 * - NOTED: a B2C queue timeout, noted for the failure reason (the payout's fate is unknown;
 *   never applied, never signalled);
 * - EARLY: a B2C result consistent with the payout but for its ConversationID, which is not
 *   recorded yet (the result beat the payout's answer): handed to the run, which applies it
 *   only if the answer brings that ConversationID;
 * - UNVERIFIED: a B2C result inconsistent with the payout, or a refusal that cannot be told from
 *   a forged one: not applied, logged as an error for reconciliation (there is no query to ask);
 * - MISMATCH: names another push than ours (not handed over);
 * - OVER_BUDGET: the transaction's runs had their MAX_CALLBACK_SIGNALS (not handed over: its own
 *   status queries settle a push);
 * - LATE, PAID_AFTER_FAILURE: the transaction is already final (the second logged as an error);
 * - MALFORMED; NOT_DELIVERED: Temporal could not take the signal (answered 500, so the provider
 *   may send it again).
 */
type Disposition =
  | 'SIGNALLED'
  | 'CONFIRMING'
  | 'EARLY'
  | 'NOTED'
  | 'UNVERIFIED'
  | 'MISMATCH'
  | 'OVER_BUDGET'
  | 'LATE'
  | 'PAID_AFTER_FAILURE'
  | 'MALFORMED'
  | 'NOT_DELIVERED';
type Kind = MobileMoneyCallbackRecord['kind'];

const digest = (value: string) => createHash('sha256').update(value).digest();
/** Constant-time: how much of a guessed token is right must not show in the answer's timing. */
const sameToken = (given: string, expected: string) => timingSafeEqual(digest(given), digest(expected));

/**
 * The mobile-money provider's callbacks: push-prompt results, B2C results and B2C queue
 * timeouts. The provider signs nothing, so each URL carries the transaction id and its
 * unguessable token, and a callback is a trigger, never proof: only one complete and
 * consistent with the pending request moves money (domain/mobile-money/callbacks.ts); every
 * other push callback makes the run ask the status query, and every other B2C result is
 * recorded and escalated. A callback to an unknown address is counted and logged, never
 * stored; a transaction's callbacks are stored up to CALLBACKS_STORED_PER_RESOURCE.
 */
export function mobileMoneyCallbackRoutes(
  deps: AppDeps,
  workflows: MobileMoneyWorkflows,
  metrics: HttpMetrics,
): AnyRoute[] {
  const { db, logger, config } = deps;
  const cap = config.CALLBACKS_STORED_PER_RESOURCE;

  interface Received {
    kind: Kind;
    row: TransactionRow;
    raw: string;
    body: unknown;
  }

  async function record(received: Received, disposition: Disposition, problems: string[] = []) {
    const { kind, row, raw, body } = received;
    const note = problems.length > 0 ? problems.join('; ') : undefined;
    const stored = await storeMobileMoneyCallback(db, cap, {
      kind,
      transactionId: row.id,
      raw,
      body,
      disposition,
      note,
    });
    const meta = { transaction_id: row.id, kind, disposition, note };
    if (!stored) {
      metrics.callbackRefused('mobile_money', 'over_cap');
      logger.warn(meta, 'mobile-money callback not stored: the transaction has its share of stored callbacks');
    }
    if (disposition === 'PAID_AFTER_FAILURE')
      logger.error(meta, 'provider reports money moved for a FAILED transaction; reconcile');
    else if (disposition === 'OVER_BUDGET')
      logger.error(
        meta,
        'callback not handed to the run: its signal budget is spent (a flood?); reconcile if it settles nothing',
      );
    else if (disposition === 'UNVERIFIED')
      logger.error(meta, 'B2C result not applied: inconsistent with the payout or unverifiable; reconcile');
    else if (disposition === 'EARLY')
      logger.warn(
        meta,
        "B2C result before the payout's answer was recorded: the run applies it only if the answer brings its ConversationID",
      );
    else if (disposition !== 'SIGNALLED' && disposition !== 'CONFIRMING' && disposition !== 'NOTED')
      logger.warn(meta, 'mobile-money callback not acted on');
  }

  /**
   * Hands the callback to its run, within the transaction's signal budget (OVER_BUDGET past it):
   * the disposition, LATE when the run has ended; NOT_DELIVERED, its claim given back, when
   * Temporal cannot take it.
   */
  async function deliver(
    received: Received,
    disposition: Disposition,
    send: () => Promise<boolean>,
    problems: string[] = [],
  ): Promise<void> {
    // Early results spend at most MAX_EARLY_CALLBACK_SIGNALS of the budget: a flood of them (a
    // failure needs no amount or receipt to look consistent) leaves room for the result itself.
    const budget = disposition === 'EARLY' ? MAX_EARLY_CALLBACK_SIGNALS : MAX_CALLBACK_SIGNALS;
    if (!(await claimCallbackSignal(db, received.row.id, budget))) return record(received, 'OVER_BUDGET', problems);
    let delivered: boolean;
    try {
      delivered = await send();
    } catch (error) {
      await returnCallbackSignal(db, received.row.id);
      await record(received, 'NOT_DELIVERED', problems);
      throw error;
    }
    await record(received, delivered ? disposition : 'LATE', problems);
  }

  /** A callback for a transaction that is already final: late, or a payment we gave up on. */
  const afterFinal = (row: TransactionRow, resultCode: string): Disposition =>
    row.status === 'FAILED' && resultCode === '0' ? 'PAID_AFTER_FAILURE' : 'LATE';

  /** The transaction the URL names, when its token matches; otherwise counted and logged (never stored) and 404. */
  async function addressed(ctx: Context, params: { id: string; token: string }, kind: Kind): Promise<Received> {
    const raw = ctx.request.rawBody ?? '';
    const row = isUuid(params.id) ? await findTransaction(db, params.id) : undefined;
    // A push's address takes no payout callbacks and the reverse: each would spend the other's budget.
    const ofItsKind = row?.type === (kind === 'STK' ? 'STK_PUSH' : 'SEND_MONEY');
    if (!row || !ofItsKind || !sameToken(params.token, row.callback_token)) {
      metrics.callbackRefused('mobile_money', 'token');
      // Metadata only: never the token, never the body.
      logger.warn(
        { kind, transaction_id: isUuid(params.id) ? params.id : 'not a uuid', source: ctx.ip, bytes: raw.length },
        'mobile-money callback to an unknown address refused',
      );
      throw new ServiceError(ErrorCode.NOT_FOUND, 'No such callback address');
    }
    return { kind, row, raw, body: ctx.request.body };
  }

  /** The callback as its parser reads it; one it cannot read is recorded MALFORMED and refused 400. */
  async function parsed<T>(received: Received, parse: (body: unknown) => T, refusal: string): Promise<T> {
    try {
      return parse(received.body);
    } catch (error) {
      if (!(error instanceof MalformedCallbackError)) throw error;
      await record(received, 'MALFORMED');
      throw new ServiceError(ErrorCode.BAD_REQUEST, refusal);
    }
  }

  /** A receipt (well-formed, else there is nothing to look up) already on another transaction. */
  const receiptClash = async (receipt: string | undefined, row: TransactionRow) =>
    receipt !== undefined && RECEIPT.test(receipt) && (await receiptTaken(db, receipt, row.id));

  const common = {
    tags: ['transactions'],
    extension: true as const,
    callback: { provider: 'mobile_money' as const, sources: config.MOBILE_MONEY_CALLBACK_SOURCES },
    responses: { 200: { description: 'Received (duplicates and late ones too)', schema: Acknowledged } },
    errors: {
      NOT_FOUND: 'no transaction with this id and token (counted and logged, not stored)',
      BAD_REQUEST: 'not a callback of this kind',
      INTERNAL_SERVER_ERROR: 'Temporal could not take the callback: send it again',
    },
  };
  const ack = { ResultCode: 0, ResultDesc: 'Accepted' };

  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/transactions/mobilemoney/callbacks/stk/{id}/{token}',
      operationId: 'receiveStkPushCallback',
      summary: 'Push-prompt result callback (the provider calls it; not for clients)',
      request: { params: CallbackAddress, body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        const received = await addressed(ctx, params, 'STK');
        const { row } = received;
        const callback = await parsed(received, parseStkCallback, 'Not a push-prompt callback');
        ctx.body = ack;
        if (FINAL_STATUSES.includes(row.status)) return record(received, afterFinal(row, callback.resultCode));
        // A callback naming another push changes nothing: the run would not hear of it either.
        const ownPush = row.checkout_request_id
          ? callback.checkoutRequestId === row.checkout_request_id
          : !(await checkoutRequestTaken(db, callback.checkoutRequestId, row.id));
        if (!ownPush) return record(received, 'MISMATCH', ['another CheckoutRequestID']);

        const { receipt } = callback.metadata ?? {};
        const assessment: Assessment = assessPushCallback(
          {
            checkoutRequestId: row.checkout_request_id,
            merchantRequestId: row.merchant_request_id,
            amountMinor: Number(row.amount),
            phone: row.mobile_number,
          },
          { ...callback, ...callback.metadata },
        );
        if (await receiptClash(receipt, row)) {
          assessment.problems.push('a receipt already recorded on another transaction');
          assessment.paymentMatches = false;
        }
        const settles = assessment.problems.length === 0 && !config.STK_PUSH_CONFIRM_SUCCESS;
        if (settles) {
          return deliver(received, 'SIGNALLED', () =>
            workflows.stkResult(row.id, {
              source: 'callback',
              checkoutRequestId: callback.checkoutRequestId,
              merchantRequestId: callback.merchantRequestId,
              resultCode: callback.resultCode,
              resultDesc: callback.resultDesc,
              receipt,
              transactionDate: callback.metadata?.transactionDate,
            }),
          );
        }
        if (config.STK_PUSH_CONFIRM_SUCCESS && assessment.problems.length === 0)
          assessment.problems.push('STK_PUSH_CONFIRM_SUCCESS: every payment is confirmed by the status query');
        const trusted = assessment.paymentMatches ? receipt : undefined;
        return deliver(
          received,
          'CONFIRMING',
          () => workflows.stkCallback(row.id, { checkoutRequestId: callback.checkoutRequestId, receipt: trusted }),
          assessment.problems,
        );
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/result',
      operationId: 'receiveB2cResult',
      summary: 'B2C result callback (the provider calls it; not for clients)',
      request: { params: CallbackAddress, body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        const received = await addressed(ctx, params, 'B2C_RESULT');
        const { row } = received;
        const result = await parsed(received, parseB2cResult, 'Not a B2C result');
        ctx.body = ack;
        if (FINAL_STATUSES.includes(row.status)) return record(received, afterFinal(row, result.resultCode));
        const { TransactionAmount: amount, TransactionReceipt, ReceiverPartyPublicName: receiver } = result.parameters;
        const receipt = String(TransactionReceipt ?? result.transactionId ?? '') || undefined;
        const assessment = assessPayoutResult(
          {
            id: row.id,
            conversationId: row.conversation_id,
            amountMinor: Number(row.amount),
            phone: row.mobile_number,
          },
          { ...result, amount, receipt, receiver: receiver === undefined ? undefined : String(receiver) },
        );
        if (result.resultCode === '0' && (await receiptClash(receipt, row))) {
          assessment.problems.push('a receipt already recorded on another transaction');
          assessment.awaitsAnswer = false;
        }
        const outcome = {
          kind: 'result' as const,
          resultCode: result.resultCode,
          resultDesc: result.resultDesc,
          conversationId: result.conversationId,
          receipt,
        };
        // Before the payout's answer is recorded: the run judges it once the answer comes.
        if (assessment.awaitsAnswer)
          return deliver(received, 'EARLY', () => workflows.sendMoneyEarlyResult(row.id, outcome), assessment.problems);
        if (assessment.problems.length > 0) return record(received, 'UNVERIFIED', assessment.problems);
        return deliver(received, 'SIGNALLED', () => workflows.sendMoneyResult(row.id, outcome));
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/timeout',
      operationId: 'receiveB2cQueueTimeout',
      summary: 'B2C queue timeout callback (the provider calls it; not for clients)',
      request: { params: CallbackAddress, body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        const received = await addressed(ctx, params, 'B2C_TIMEOUT');
        const { row } = received;
        const result = await parsed(received, parseB2cResult, 'Not a B2C queue timeout');
        ctx.body = ack;
        if (FINAL_STATUSES.includes(row.status)) return record(received, 'LATE');
        if (result.originatorConversationId !== row.id)
          return record(received, 'MISMATCH', ['another OriginatorConversationID']);
        // The payout's fate is unknown: noted (once) for the failure reason if the wait ends
        // without a result; the run hears nothing, so no number of these can crowd out the result.
        const first = await noteQueueTimeout(db, row.id);
        return record(received, 'NOTED', first ? [] : ['noted before']);
      },
    }),
  ];
}

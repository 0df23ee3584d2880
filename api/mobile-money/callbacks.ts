import type { Context } from 'koa';
import { z } from 'zod';
import { noteQueueTimeout } from '../../db/mobile-money/callbacks';
import { findTransaction, findTransactionNaming, type TransactionRow } from '../../db/mobile-money/transactions';
import { isUuid } from '../../domain/identifiers';
import { type Assessment, assessPayoutResult, assessPushCallback } from '../../domain/mobile-money/callbacks';
import { FINAL_STATUSES } from '../../domain/mobile-money/transactions';
import { parseB2cResult, parseStkCallback } from '../../providers/mobile-money/callbacks';
import type { Needs } from '../deps';
import type { HttpMetrics } from '../metrics';
import { type AnyRoute, defineRoute } from '../route';
import {
  CallbackAddress,
  callbackHandling,
  type Kind,
  type Received,
  readable,
  receiptToLookUp,
  sameToken,
} from './callback-handling';
import { sendMoneyStatusRoutes } from './send-money-status';
import type { MobileMoneyWorkflows } from './workflows';

/**
 * The mobile-money provider's callbacks: push-prompt results, B2C results and B2C queue
 * timeouts (and, in ./send-money-status.ts, the Results of payout status queries). The
 * provider signs nothing, so each URL carries the transaction id and its unguessable token, and
 * a callback is a trigger, never proof: only one complete and consistent with the pending
 * request moves money (domain/mobile-money/callbacks.ts); every other push callback makes the
 * run ask the status query, and every other B2C result is recorded and escalated (the payout's
 * own status queries settle it). A callback to an unknown address is counted and logged, never
 * stored; a transaction's callbacks are stored up to CALLBACKS_STORED_PER_RESOURCE.
 */
export function mobileMoneyCallbackRoutes(
  deps: Needs<
    'db' | 'logger',
    'STK_PUSH_CONFIRM_SUCCESS' | 'CALLBACKS_STORED_PER_RESOURCE' | 'MOBILE_MONEY_CALLBACK_SOURCES'
  >,
  workflows: MobileMoneyWorkflows,
  metrics: HttpMetrics,
): AnyRoute[] {
  const { db, config } = deps;
  const handling = callbackHandling(deps, metrics);
  const { record, deliver, afterFinal, unknownAddress, parsed, malformed, receiptClash, common, ack } = handling;

  /**
   * The transaction the URL names (read by `find`), when its token matches; otherwise counted and
   * logged (never stored) and 404.
   */
  async function addressed<R extends TransactionRow>(
    ctx: Context,
    params: { id: string; token: string },
    kind: Kind,
    find: (id: string) => Promise<R | undefined>,
  ): Promise<Received & { row: R }> {
    const row = isUuid(params.id) ? await find(params.id) : undefined;
    // A push's address takes no payout callbacks and the reverse: each would spend the other's budget.
    const ofItsKind = row?.type === (kind === 'STK' ? 'STK_PUSH' : 'SEND_MONEY');
    if (!row || !ofItsKind || !sameToken(params.token, row.callback_token)) return unknownAddress(ctx, kind, params.id);
    return { kind, row, raw: ctx.request.rawBody ?? '', body: ctx.request.body };
  }
  const byId = (id: string) => findTransaction(db, id);

  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/transactions/mobilemoney/callbacks/stk/{id}/{token}',
      operationId: 'receiveStkPushCallback',
      summary: 'Push-prompt result callback (the provider calls it; not for clients)',
      request: { params: CallbackAddress, body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        // Read before the lookup, so that one read also says whether the push id and the receipt
        // it names are another transaction's; an unknown address is 404 whatever the body.
        const callback = readable(parseStkCallback, ctx.request.body);
        const { receipt } = callback?.metadata ?? {};
        const received = await addressed(ctx, params, 'STK', (id) =>
          findTransactionNaming(db, id, {
            checkoutRequestId: callback?.checkoutRequestId,
            receipt: receiptToLookUp(receipt),
          }),
        );
        const { row } = received;
        if (!callback) return malformed(received, 'Not a push-prompt callback');
        ctx.body = ack;
        if (FINAL_STATUSES.includes(row.status)) return record(received, afterFinal(row, callback.resultCode));
        // A callback naming another push changes nothing: the run would not hear of it either.
        const ownPush = row.checkout_request_id
          ? callback.checkoutRequestId === row.checkout_request_id
          : !row.checkout_request_taken;
        if (!ownPush) return record(received, 'MISMATCH', ['another CheckoutRequestID']);

        const assessment: Assessment = assessPushCallback(
          {
            checkoutRequestId: row.checkout_request_id,
            merchantRequestId: row.merchant_request_id,
            amountMinor: Number(row.amount),
            phone: row.mobile_number,
          },
          { ...callback, ...callback.metadata },
        );
        if (row.receipt_taken) {
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
        const received = await addressed(ctx, params, 'B2C_RESULT', byId);
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
        const received = await addressed(ctx, params, 'B2C_TIMEOUT', byId);
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
    ...sendMoneyStatusRoutes(deps, workflows, handling),
  ];
}

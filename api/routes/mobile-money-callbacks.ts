import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { findTransaction, type TransactionRow } from '../../db/transactions';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { FINAL_STATUSES, MINOR_PER_SHILLING } from '../../domain/mobile-money/transaction';
import { MalformedCallbackError, parseB2cResult, parseStkCallback } from '../../providers/mobile-money/client';
import type { AppDeps } from '../deps';
import { type AnyRoute, defineRoute } from '../route';
import type { TransactionWorkflows } from '../transaction-workflows';

const Acknowledged = z.object({ ResultCode: z.number().int(), ResultDesc: z.string() }).meta({ id: 'MobileMoneyCallbackAck' });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What was done with a callback. PAID_AFTER_FAILURE: the provider reports money moved for a
 * transaction already FAILED here (a result after the wait ran out): nothing is posted, and it
 * is logged as an error for reconciliation. NOT_DELIVERED: Temporal could not take the signal;
 * the provider is answered 500 so it may send the callback again.
 */
type Disposition = 'SIGNALLED' | 'LATE' | 'PAID_AFTER_FAILURE' | 'MISMATCH' | 'DUPLICATE_RECEIPT' | 'BAD_TOKEN' | 'MALFORMED' | 'NOT_DELIVERED';
type Kind = 'STK' | 'B2C_RESULT' | 'B2C_TIMEOUT';

const digest = (value: string) => createHash('sha256').update(value).digest();
/** Constant-time: how much of a guessed token is right must not show in the answer's timing. */
const sameToken = (given: string, expected: string) => timingSafeEqual(digest(given), digest(expected));

/**
 * The mobile-money provider's callbacks: push-prompt results, B2C results and B2C queue
 * timeouts. The provider signs nothing, so each URL carries the transaction id and its
 * unguessable token; a callback is also checked against the pending request (amount, phone,
 * the provider's request id) before its transaction's workflow hears of it. Every callback is
 * recorded raw with what was done with it, and answered quickly: the workflow does the work.
 */
export function mobileMoneyCallbackRoutes(deps: AppDeps, workflows: TransactionWorkflows): AnyRoute[] {
  const { db, logger } = deps;

  async function record(kind: Kind, ref: string, raw: string, body: unknown, disposition: Disposition) {
    await db('mobile_money_callbacks').insert({ kind, transaction_ref: ref.slice(0, 64), raw, body: body === undefined ? null : JSON.stringify(body), disposition });
    if (disposition === 'PAID_AFTER_FAILURE') logger.error({ transaction_id: ref, kind, disposition }, 'provider reports money moved for a FAILED transaction; reconcile');
    else if (disposition !== 'SIGNALLED') logger.warn({ transaction_id: ref, kind, disposition }, 'mobile-money callback not acted on');
  }

  /** The callback handed to its workflow: SIGNALLED, or LATE when the run has ended; recorded NOT_DELIVERED when Temporal cannot take it. */
  async function deliver(kind: Kind, row: TransactionRow, raw: string, body: unknown, send: () => Promise<boolean>): Promise<Disposition> {
    try {
      return (await send()) ? 'SIGNALLED' : 'LATE';
    } catch (error) {
      await record(kind, row.id, raw, body, 'NOT_DELIVERED');
      throw error;
    }
  }

  /** A callback for a transaction that is already final: late, or a payment we gave up on. */
  const afterFinal = (row: TransactionRow, resultCode: string): Disposition =>
    row.status === 'FAILED' && resultCode === '0' ? 'PAID_AFTER_FAILURE' : 'LATE';

  /** The transaction the URL names, when its token matches; null (recorded) otherwise. */
  async function addressed(ctx: { request: unknown }, params: { id: string; token: string }, kind: Kind) {
    const raw = (ctx.request as { rawBody?: string }).rawBody ?? '';
    const { id, token } = params;
    const row = UUID.test(id) ? await findTransaction(db, id) : undefined;
    if (!row || !sameToken(token, row.callback_token)) {
      await record(kind, id, raw, (ctx.request as { body?: unknown }).body, 'BAD_TOKEN');
      throw new ServiceError(ErrorCode.NOT_FOUND, 'No such callback address');
    }
    return { row, raw, body: (ctx.request as { body?: unknown }).body };
  }

  function parsed<T>(parse: () => T) {
    try {
      return parse();
    } catch (error) {
      if (error instanceof MalformedCallbackError) return undefined;
      throw error;
    }
  }

  const common = {
    tags: ['transactions'],
    extension: true as const,
    // The provider is not a client to throttle; a guessed address is refused by its token.
    rateLimit: false as const,
    responses: { 200: { description: 'Received (duplicates and late ones too)', schema: Acknowledged } },
  };
  const ack = { ResultCode: 0, ResultDesc: 'Accepted' };

  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/transactions/mobilemoney/callbacks/stk/{id}/{token}',
      operationId: 'receiveStkPushCallback',
      summary: 'Push-prompt result callback (the provider calls it; not for clients)',
      request: { params: z.object({ id: z.string(), token: z.string() }), body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        const { row, raw, body } = await addressed(ctx, params, 'STK');
        const callback = parsed(() => parseStkCallback(body));
        if (!callback) {
          await record('STK', row.id, raw, body, 'MALFORMED');
          throw new ServiceError(ErrorCode.BAD_REQUEST, 'Not a push-prompt callback');
        }
        let disposition: Disposition = 'SIGNALLED';
        if (FINAL_STATUSES.includes(row.status)) disposition = afterFinal(row, callback.resultCode);
        else if ((row.checkout_request_id && callback.checkoutRequestId !== row.checkout_request_id) || (callback.resultCode === '0' && !matchesPush(row, callback.metadata))) {
          disposition = 'MISMATCH';
        } else if (callback.metadata?.receipt && (await db('transactions').where({ mobilemoney_transaction_id: callback.metadata.receipt }).whereNot({ id: row.id }).first())) {
          disposition = 'DUPLICATE_RECEIPT';
        } else {
          disposition = await deliver('STK', row, raw, body, () =>
            workflows.stkResult(row.id, {
              source: 'callback',
              checkoutRequestId: callback.checkoutRequestId,
              resultCode: callback.resultCode,
              resultDesc: callback.resultDesc,
              receipt: callback.metadata?.receipt,
              transactionDate: callback.metadata?.transactionDate,
            }),
          );
        }
        await record('STK', row.id, raw, body, disposition);
        ctx.body = ack;
      },
    }),
    ...(['result', 'timeout'] as const).map((outcome) =>
      defineRoute({
        ...common,
        method: 'post',
        path: `/v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/${outcome}`,
        operationId: outcome === 'result' ? 'receiveB2cResult' : 'receiveB2cQueueTimeout',
        summary: `B2C ${outcome === 'result' ? 'result' : 'queue timeout'} callback (the provider calls it; not for clients)`,
        request: { params: z.object({ id: z.string(), token: z.string() }), body: z.record(z.string(), z.unknown()) },
        async handler(ctx, { params }) {
          const kind = outcome === 'result' ? 'B2C_RESULT' : 'B2C_TIMEOUT';
          const { row, raw, body } = await addressed(ctx, params, kind);
          const result = parsed(() => parseB2cResult(body));
          if (!result) {
            await record(kind, row.id, raw, body, 'MALFORMED');
            throw new ServiceError(ErrorCode.BAD_REQUEST, 'Not a B2C result');
          }
          const paidAmount = result.parameters.TransactionAmount;
          let disposition: Disposition = 'SIGNALLED';
          if (FINAL_STATUSES.includes(row.status)) disposition = outcome === 'result' ? afterFinal(row, result.resultCode) : 'LATE';
          else if (result.originatorConversationId !== row.id || (paidAmount !== undefined && Number(paidAmount) * MINOR_PER_SHILLING !== Number(row.amount))) {
            disposition = 'MISMATCH';
          } else {
            const receipt = result.parameters.TransactionReceipt ?? result.transactionId;
            disposition = await deliver(kind, row, raw, body, () =>
              workflows.b2cOutcome(row.id, {
                kind: outcome,
                resultCode: result.resultCode,
                resultDesc: result.resultDesc,
                conversationId: result.conversationId,
                receipt: receipt === undefined ? undefined : String(receipt),
              }),
            );
          }
          await record(kind, row.id, raw, body, disposition);
          ctx.body = ack;
        },
      }),
    ),
  ];
}

/** A paid callback's amount and phone, when given, are the pushed request's. */
function matchesPush(row: TransactionRow, metadata: { amount?: number; phone?: string } | undefined): boolean {
  if (metadata?.amount !== undefined && metadata.amount * MINOR_PER_SHILLING !== Number(row.amount)) return false;
  if (metadata?.phone !== undefined && metadata.phone !== row.mobile_number) return false;
  return true;
}

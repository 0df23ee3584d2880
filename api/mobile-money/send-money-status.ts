import type { Context } from 'koa';
import { z } from 'zod';
import {
  claimStatusAnswer,
  findStatusQuery,
  returnStatusAnswer,
  type StatusQueryRow,
} from '../../db/mobile-money/send-money-status';
import { findTransaction } from '../../db/mobile-money/transactions';
import { isUuid } from '../../domain/identifiers';
import { assessSendMoneyStatus } from '../../domain/mobile-money/send-money-status';
import { FINAL_STATUSES } from '../../domain/mobile-money/transactions';
import { parseTransactionStatusResult } from '../../providers/mobile-money/callbacks';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute } from '../route';
import { CallbackAddress, type CallbackHandling, type Kind, type Received, sameToken } from './callback-handling';
import type { MobileMoneyWorkflows } from './workflows';

/**
 * The routes that receive the answers to a send-money run's status queries: the provider's
 * Transaction Status Results and their queue timeouts (protocol.ts, "Transaction Status"). Each
 * query has a URL token of its own, so someone who holds a payout's result URL cannot answer for
 * the provider. The Result must also carry the ids the provider answered that query with, and
 * name our payout (domain/mobile-money/send-money-status.ts). A query takes one answer. A
 * completed or declined answer is handed to the run, within the transaction's callback budget. A
 * not-found answer is handed over only after the payout's queue timeout. An answer that settles
 * nothing, because the payout is still pending or the query itself failed, is NOTED, and the run
 * asks again at its next interval.
 */
export function sendMoneyStatusRoutes(
  deps: Needs<'db' | 'logger'>,
  workflows: MobileMoneyWorkflows,
  handling: CallbackHandling,
): AnyRoute[] {
  const { db, logger } = deps;
  const { record, deliver, afterFinal, unknownAddress, parsed, receiptClash, common, ack } = handling;
  const errors = {
    ...common.errors,
    NOT_FOUND: 'no status query with this id and token (counted and logged, not stored)',
  };

  /** The query the URL names and its payout, when its token matches; otherwise counted, logged and 404. */
  async function addressed(
    ctx: Context,
    params: { id: string; token: string },
    kind: Kind,
  ): Promise<Received & { query: StatusQueryRow }> {
    const query = isUuid(params.id) ? await findStatusQuery(db, params.id) : undefined;
    const row =
      query && sameToken(params.token, query.token) ? await findTransaction(db, query.transaction_id) : undefined;
    if (!query || !row || row.type !== 'SEND_MONEY' || row.organization_id !== query.organization_id)
      return unknownAddress(ctx, kind, params.id);
    return { kind, row, query, raw: ctx.request.rawBody ?? '', body: ctx.request.body };
  }

  const address = '/v1/transactions/mobilemoney/callbacks/b2c-status/{id}/{token}';
  return [
    defineRoute({
      ...common,
      errors,
      method: 'post',
      path: `${address}/result`,
      operationId: 'receivePayoutStatusResult',
      summary: "A payout status query's Result (the provider calls it; not for clients)",
      request: { params: CallbackAddress, body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        const received = await addressed(ctx, params, 'B2C_STATUS');
        const { row, query } = received;
        const result = await parsed(received, parseTransactionStatusResult, 'Not a status result');
        ctx.body = ack;
        const { verdict, problems, early } = assessSendMoneyStatus(
          {
            id: row.id,
            conversationId: row.conversation_id,
            amountMinor: Number(row.amount),
            phone: row.mobile_number,
          },
          { conversationId: query.conversation_id, originatorConversationId: query.originator_conversation_id },
          result,
        );
        if (FINAL_STATUSES.includes(row.status))
          return record(received, afterFinal(row, verdict.kind === 'completed' ? '0' : result.resultCode), problems);
        if (verdict.kind === 'completed' && (await receiptClash(verdict.receipt, row)))
          problems.push('a receipt already recorded on another transaction');
        if (early) return record(received, 'EARLY', problems);
        if (problems.length > 0) return record(received, 'UNVERIFIED', problems);
        // One answer per query: a copy is REPEATED; a different one (its ids replayed) is not believed.
        const before = await claimStatusAnswer(db, query.id, verdict.kind);
        if (before !== undefined)
          return before === verdict.kind
            ? record(received, 'REPEATED')
            : record(received, 'UNVERIFIED', [`another answer to a query answered ${before}`]);
        if (verdict.kind === 'pending') return record(received, 'NOTED', [`the provider reports it ${verdict.status}`]);
        if (verdict.kind === 'query_failed') {
          logger.warn(
            { transaction_id: row.id, result_code: result.resultCode },
            'payout status query failed at the provider (its initiator or role?); asked again at the next interval',
          );
          return record(received, 'NOTED', [`the query failed: ${result.resultCode}`]);
        }
        // "Not found" (its meaning *assumed*) releases the hold only with the provider's own word
        // that the payout timed out in its queue, from a query asked after it: until then it may be queued.
        if (verdict.kind === 'not_found' && !(row.queue_timeout_at && query.asked_at >= row.queue_timeout_at))
          return record(received, 'NOTED', ['not found, asked before any queue timeout: it may still be queued']);
        const answer =
          verdict.kind === 'not_found'
            ? { queryId: query.id, state: 'not_found' as const }
            : verdict.kind === 'completed'
              ? {
                  queryId: query.id,
                  state: 'completed' as const,
                  receipt: verdict.receipt,
                  conversationId: verdict.conversationId,
                }
              : {
                  queryId: query.id,
                  state: 'failed' as const,
                  resultCode: verdict.resultCode,
                  resultDesc: verdict.resultDesc,
                  conversationId: verdict.conversationId,
                };
        try {
          return await deliver(received, 'SIGNALLED', () => workflows.sendMoneyStatus(row.id, answer));
        } catch (error) {
          await returnStatusAnswer(db, query.id); // not handed over: the provider's retry must be taken
          throw error;
        }
      },
    }),
    defineRoute({
      ...common,
      errors,
      method: 'post',
      path: `${address}/timeout`,
      operationId: 'receivePayoutStatusQueueTimeout',
      summary: "A payout status query's queue timeout (the provider calls it; not for clients)",
      request: { params: CallbackAddress, body: z.record(z.string(), z.unknown()) },
      async handler(ctx, { params }) {
        const received = await addressed(ctx, params, 'B2C_STATUS_TIMEOUT');
        await parsed(received, parseTransactionStatusResult, 'Not a status queue timeout');
        ctx.body = ack;
        // The query was not answered: it says nothing of the payout, and the run asks again.
        return record(received, FINAL_STATUSES.includes(received.row.status) ? 'LATE' : 'NOTED');
      },
    }),
  ];
}

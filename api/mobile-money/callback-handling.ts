import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  claimCallbackSignal,
  type MobileMoneyCallbackRecord,
  returnCallbackSignal,
  storeMobileMoneyCallback,
} from '../../db/mobile-money/callbacks';
import { receiptTaken, type TransactionRow } from '../../db/mobile-money/transactions';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { isUuid } from '../../domain/identifiers';
import { MAX_CALLBACK_SIGNALS, MAX_EARLY_CALLBACK_SIGNALS, RECEIPT } from '../../domain/mobile-money/callbacks';
import { MalformedCallbackError } from '../../providers/mobile-money/callbacks';
import type { Needs } from '../deps';
import type { HttpMetrics } from '../metrics';

/**
 * What every mobile-money callback route shares: the acknowledgement, the address check's
 * refusal, storing a callback with what was done with it, handing it to its run within the
 * transaction's signal budget, and reading it with its parser.
 */
export const Acknowledged = z
  .object({ ResultCode: z.number().int(), ResultDesc: z.string() })
  .meta({ id: 'MobileMoneyCallbackAck' });
export const CallbackAddress = z.object({ id: z.string().max(64), token: z.string().max(64) });

/**
 * What was done with a callback (stored with it; the README lists them):
 * - SIGNALLED: complete and consistent, handed to the run as the result;
 * - CONFIRMING: handed to the run as a trigger: it asks the provider's status query now;
 * - NOTED: a B2C queue timeout, noted for the failure reason (the payout's fate is unknown;
 *   never applied, never signalled); a status Result that settles nothing (the payout still
 *   pending, the query itself failed, or "not found" before any queue timeout) or a status
 *   query's queue timeout: the run asks again;
 * - EARLY: a B2C result consistent with the payout but for its ConversationID, which is not
 *   recorded yet (the result beat the payout's answer): handed to the run, which applies it
 *   only if the answer brings that ConversationID; a status Result before its query's answer
 *   was recorded: its ids cannot be checked, so it is dropped (the run asks again);
 * - REPEATED: a status Result like the one its query already took (a copy): not acted on again;
 * - UNVERIFIED: a B2C result or status Result inconsistent with the payout or its query: not
 *   applied, logged as an error for reconciliation (the payout's status queries settle it);
 * - MISMATCH: names another push than ours (not handed over);
 * - OVER_BUDGET: the transaction's runs had their MAX_CALLBACK_SIGNALS (not handed over: its own
 *   status queries settle a push);
 * - LATE, PAID_AFTER_FAILURE: the transaction is already final (the second logged as an error);
 * - MALFORMED; NOT_DELIVERED: Temporal could not take the signal (answered 500, so the provider
 *   may send it again).
 */
export type Disposition =
  | 'SIGNALLED'
  | 'CONFIRMING'
  | 'EARLY'
  | 'NOTED'
  | 'REPEATED'
  | 'UNVERIFIED'
  | 'MISMATCH'
  | 'OVER_BUDGET'
  | 'LATE'
  | 'PAID_AFTER_FAILURE'
  | 'MALFORMED'
  | 'NOT_DELIVERED';
export type Kind = MobileMoneyCallbackRecord['kind'];

/** The callback as its parser reads it; undefined when it cannot (see `parsed` and `malformed`). */
export function readable<T>(parse: (body: unknown) => T, body: unknown): T | undefined {
  try {
    return parse(body);
  } catch (error) {
    if (error instanceof MalformedCallbackError) return undefined;
    throw error;
  }
}

/** A receipt worth looking up: a well-formed one (another could not be stored on any transaction). */
export const receiptToLookUp = (receipt: string | undefined) =>
  receipt !== undefined && RECEIPT.test(receipt) ? receipt : undefined;

const digest = (value: string) => createHash('sha256').update(value).digest();
/** Constant-time: how much of a guessed token is right must not show in the answer's timing. */
export const sameToken = (given: string, expected: string) => timingSafeEqual(digest(given), digest(expected));

/** A callback addressed to one of our transactions, as received. */
export interface Received {
  kind: Kind;
  row: TransactionRow;
  raw: string;
  body: unknown;
}

export function callbackHandling(
  deps: Needs<'db' | 'logger', 'CALLBACKS_STORED_PER_RESOURCE' | 'MOBILE_MONEY_CALLBACK_SOURCES'>,
  metrics: HttpMetrics,
) {
  const { db, logger, config } = deps;
  const cap = config.CALLBACKS_STORED_PER_RESOURCE;

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
      logger.error(meta, 'payout callback not applied: inconsistent with the payout or its query; reconcile');
    else if (disposition === 'EARLY')
      logger.warn(
        meta,
        kind === 'B2C_STATUS'
          ? "status result before its query's answer was recorded: not applied, the run asks again"
          : "B2C result before the payout's answer was recorded: the run applies it only if the answer brings its ConversationID",
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

  /** A callback whose address (id and token) matches nothing: counted and logged (never stored), and 404. */
  function unknownAddress(ctx: Context, kind: Kind, id: string): never {
    metrics.callbackRefused('mobile_money', 'token');
    // Metadata only: never the token, never the body.
    const named = isUuid(id) ? id : 'not a uuid';
    logger.warn(
      {
        kind,
        ...(kind === 'B2C_STATUS' || kind === 'B2C_STATUS_TIMEOUT'
          ? { status_query_id: named }
          : { transaction_id: named }),
        source: ctx.ip,
        bytes: (ctx.request.rawBody ?? '').length,
      },
      'mobile-money callback to an unknown address refused',
    );
    throw new ServiceError(ErrorCode.NOT_FOUND, 'No such callback address');
  }

  /** The callback as its parser reads it; one it cannot read is recorded MALFORMED and refused 400. */
  async function parsed<T>(received: Received, parse: (body: unknown) => T, refusal: string): Promise<T> {
    const callback = readable(parse, received.body);
    return callback ?? malformed(received, refusal);
  }

  /** A callback its parser cannot read: recorded MALFORMED and refused 400. */
  async function malformed(received: Received, refusal: string): Promise<never> {
    await record(received, 'MALFORMED');
    throw new ServiceError(ErrorCode.BAD_REQUEST, refusal);
  }

  /** A receipt (well-formed, else there is nothing to look up) already on another transaction. */
  const receiptClash = async (receipt: string | undefined, row: TransactionRow) => {
    const lookedUp = receiptToLookUp(receipt);
    return lookedUp !== undefined && (await receiptTaken(db, lookedUp, row.id));
  };

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

  return { record, deliver, afterFinal, unknownAddress, parsed, malformed, receiptClash, common, ack };
}
export type CallbackHandling = ReturnType<typeof callbackHandling>;

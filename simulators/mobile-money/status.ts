import { randomBytes } from 'node:crypto';
import type Router from '@koa/router';
import { feeFor, MINOR_PER_SHILLING } from '../../domain/mobile-money/transactions';
import { authorized, initiatorValid, str, validate } from './checks';
import {
  type Delivery,
  eatDigits,
  INVALID_INITIATOR,
  isUrl,
  LIMITS,
  requestId,
  type SentCallback,
  type SimulatedPayment,
  type SimulatedStatusQuery,
  text,
} from './model';
import type { SimulatorState } from './state';

/**
 * The Transaction Status query (../protocol.ts, "Transaction Status"): checked as the provider
 * checks it, answered "accepted", and the payout's true state as this simulator decided it sent
 * a little later as a Result to the query's ResultURL: Completed with its receipt and amount,
 * Declined with its result code, Initiated while undecided, 2032 for a payout it does not know
 * (or that timed out in its queue, never processed), 2001 when the query's own initiator or
 * credential is wrong. Status results go the way the callback mode says (chaos included), but
 * `callbacks: 'lose'` spares them: `statusResultsLost` loses the next N instead.
 */
export const STATUS_NOT_FOUND = { code: '2032', desc: 'The transaction receipt number does not exist.' };

/** `YYYYMMDDHHmmss` in Nairobi time, as the status Result writes times. */
const eatTime = (iso: string) => eatDigits(new Date(iso)).slice(0, 14);
/** ReasonType by B2C CommandID (the samples show the first two). */
const REASON_TYPES: Record<string, string> = {
  BusinessPayment: 'Business Payment to Customer via API',
  SalaryPayment: 'Salary Payment via API',
  PromotionPayment: 'Promotion Payment via API',
};
/** What the business paid for a payout (DebitPartyCharges), by the B2C tariff. */
const charges = (amount: number) =>
  `Fee For B2C Payment|KES|${(feeFor('SEND_MONEY', amount * MINOR_PER_SHILLING) / MINOR_PER_SHILLING).toFixed(2)}`;

/**
 * What the status routes send their Results with: the simulator's callbacks (./callbacks.ts).
 * Named here, not imported from there, because the callbacks' forgeries build status Results
 * with this module's statusResult: each importing the other would be a circle.
 */
export interface StatusResultSender {
  record(entry: Omit<SentCallback, 'at'>): SentCallback;
  post(delivery: Delivery): Promise<SentCallback>;
  dispatch(delivery: Delivery): void;
}

export function statusRoutes(api: Router, state: SimulatorState, callbacks: StatusResultSender): void {
  const { options } = state;
  const b2cShortCode = options.b2cShortCode ?? options.shortCode;

  api.post('/mpesa/transactionstatus/v1/query', (ctx) => {
    if (!authorized(state, ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const original = body.OriginalConversationID;
    const receipt = body.TransactionID;
    const valid = validate(ctx, [
      ['Initiator', text(body.Initiator, 100)],
      ['SecurityCredential', text(body.SecurityCredential, 2048)],
      ['CommandID', body.CommandID === 'TransactionStatusQuery'],
      // Either names the transaction; whichever is sent must be text.
      ['TransactionID', receipt === undefined ? original !== undefined : text(receipt, 64)],
      ['OriginalConversationID', original === undefined || text(original, 128)],
      ['PartyA', str(body.PartyA) === b2cShortCode],
      ['IdentifierType', str(body.IdentifierType) === '4'],
      ['ResultURL', isUrl(body.ResultURL)],
      ['QueueTimeOutURL', isUrl(body.QueueTimeOutURL)],
      ['Remarks', text(body.Remarks, 100)],
      ['Occasion', body.Occasion === undefined || (typeof body.Occasion === 'string' && body.Occasion.length <= 100)],
    ]);
    if (!valid) return;
    const query: SimulatedStatusQuery = {
      ...(typeof original === 'string' && { originalConversationId: original }),
      ...(typeof receipt === 'string' && { receipt }),
      originatorConversationId: requestId(),
      conversationId: `AG_${eatDigits().slice(0, 8)}_${randomBytes(10).toString('hex')}`,
      initiatorValid: initiatorValid(state, body, 'Initiator'),
      resultUrl: str(body.ResultURL),
      queueTimeoutUrl: str(body.QueueTimeOutURL),
      ...(typeof body.Occasion === 'string' && { occasion: body.Occasion }),
      receivedAt: new Date().toISOString(),
      resultsSent: 0,
    };
    state.statusQueries.push(query);
    if (state.statusQueries.length > LIMITS.records) state.statusQueries.shift();
    state.timers.later(state.mode.callbackDelayMs, () => sendStatus(query));
    ctx.body = {
      OriginatorConversationID: query.originatorConversationId,
      ConversationID: query.conversationId,
      ResponseCode: '0',
      ResponseDescription: 'Accept the service request successfully.',
    };
  });

  /** The payout a query names, by OriginalConversationID or by receipt. */
  const paymentOf = (query: SimulatedStatusQuery) =>
    query.originalConversationId !== undefined
      ? state.payments.get(query.originalConversationId)
      : [...state.payments.values()].find((p) => p.transactionId === query.receipt);

  function sendStatus(query: SimulatedStatusQuery) {
    const payment = paymentOf(query);
    const { body, answered } = statusResult(state, query, payment);
    query.answered = answered;
    const delivery = {
      kind: 'b2c_status' as const,
      id: payment?.originatorConversationId ?? query.originalConversationId ?? query.receipt ?? '',
      url: query.resultUrl,
      body,
    };
    // Chaos mode: the payout's own results held for a query are released now.
    if (payment) state.chaos.queried(payment.originatorConversationId);
    if (!state.mode.chaos && state.statusResultsLostSoFar < state.mode.statusResultsLost) {
      state.statusResultsLostSoFar += 1;
      callbacks.record({ ...delivery, lost: true });
      return;
    }
    query.resultsSent += 1;
    if (!state.mode.chaos && state.mode.callbacks === 'lose') void callbacks.post(delivery);
    else callbacks.dispatch(delivery);
  }
}

/**
 * The status Result for `query` about `payment` (undefined: unknown here), as the provider builds
 * it: the query's ids at the top, the payout's facts in ResultParameters. `overrides` replace
 * ResultCode, ResultDesc or a parameter by Key (null removes it); `ids` the query's ids (forgeries).
 */
export function statusResult(
  state: SimulatorState,
  query: SimulatedStatusQuery,
  payment: SimulatedPayment | undefined,
  overrides: Record<string, unknown> = {},
  ids: Partial<Pick<SimulatedStatusQuery, 'originatorConversationId' | 'conversationId'>> = {},
): { body: unknown; answered: NonNullable<SimulatedStatusQuery['answered']> } {
  const b2cShortCode = state.options.b2cShortCode ?? state.options.shortCode;
  const known = payment !== undefined && payment.state !== 'timed_out';
  const answered = !query.initiatorValid
    ? 'query_failed'
    : !known
      ? 'not_found'
      : payment.state === 'completed'
        ? 'completed'
        : payment.state === 'failed'
          ? 'failed'
          : 'pending';
  const outcome =
    answered === 'query_failed'
      ? INVALID_INITIATOR
      : answered === 'not_found'
        ? STATUS_NOT_FOUND
        : { code: 0, desc: 'The service request is processed successfully.' };
  const { ResultCode = outcome.code, ResultDesc = outcome.desc, ...changed } = overrides;
  const parameters: Record<string, unknown> =
    known && query.initiatorValid
      ? {
          DebitPartyName: `${b2cShortCode} - Simulated Business`,
          CreditPartyName: `${payment.phone} - Simulated Recipient`,
          OriginatorConversationID: payment.originatorConversationId,
          InitiatedTime: eatTime(payment.receivedAt),
          DebitAccountType: 'Utility Account',
          DebitPartyCharges: charges(payment.amount),
          TransactionReason: payment.state === 'failed' ? payment.resultDesc : undefined,
          ReasonType: REASON_TYPES[payment.commandId] ?? REASON_TYPES.BusinessPayment,
          TransactionStatus: { completed: 'Completed', failed: 'Declined', pending: 'Initiated' }[answered as string],
          ...(payment.decidedAt && { FinalisedTime: eatTime(payment.decidedAt) }),
          Amount: String(payment.amount),
          ConversationID: payment.conversationId,
          ...(payment.state === 'completed' && { ReceiptNo: payment.transactionId }),
          ...(payment.state === 'failed' && { ReasonCode: String(payment.resultCode) }),
          ...changed,
        }
      : changed;
  const list = Object.entries(parameters)
    .filter(([, value]) => value !== null)
    .map(([Key, Value]) => (Value === undefined ? { Key } : { Key, Value }));
  const body = {
    Result: {
      ResultType: 0,
      ResultCode,
      ResultDesc,
      OriginatorConversationID: ids.originatorConversationId ?? query.originatorConversationId,
      ConversationID: ids.conversationId ?? query.conversationId,
      // The query's own placeholder, as in the provider's samples (MBN0000000).
      TransactionID: 'SIM0000000',
      ...(list.length > 0 && { ResultParameters: { ResultParameter: list } }),
      ReferenceData: {
        ReferenceItem: query.occasion === undefined ? { Key: 'Occasion' } : { Key: 'Occasion', Value: query.occasion },
      },
    },
  };
  return { body, answered };
}

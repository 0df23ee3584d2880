import { request } from '../../providers/http';
import { mobileMoneyForgeries } from './forgeries';
import type { SimulatorState } from './state';
import {
  type Delivery,
  eatDigits,
  LIMITS,
  type Outcome,
  type SentCallback,
  type SimulatedPayment,
  type SimulatedPush,
} from './model';

/**
 * What the simulated provider sends back: push results and B2C results or queue timeouts, built
 * as the provider builds them, delivered as the callback mode says (lost, duplicated, late,
 * reordered, or as chaos mode plans each), and the decisions that produce them.
 */

/** A push result (stkCallback) as the provider builds it; `overrides` replace or add its fields (forgeries). */
function stkBody(push: SimulatedPush, overrides: Record<string, unknown> = {}) {
  const { ResultCode = push.resultCode, ResultDesc = push.resultDesc, ...items } = overrides;
  const paid = push.resultCode === 0 || push.resultCode === '0';
  const metadata: Record<string, unknown> = paid
    ? {
        Amount: push.amount,
        MpesaReceiptNumber: push.receipt,
        Balance: undefined,
        TransactionDate: push.transactionDate,
        PhoneNumber: Number(push.phone),
        ...items,
      }
    : items;
  const item = Object.entries(metadata)
    .filter(([, value]) => value !== null)
    .map(([Name, Value]) => (Value === undefined ? { Name } : { Name, Value }));
  return {
    Body: {
      stkCallback: {
        MerchantRequestID: push.merchantRequestId,
        CheckoutRequestID: push.checkoutRequestId,
        ResultCode,
        ResultDesc,
        ...(item.length > 0 && { CallbackMetadata: { Item: item } }),
      },
    },
  };
}

/** A B2C Result (or queue timeout) as the provider builds it; `overrides` as for stkBody. */
function b2cBody(payment: SimulatedPayment, overrides: Record<string, unknown> = {}) {
  const { ResultCode = payment.resultCode, ResultDesc = payment.resultDesc, ...params } = overrides;
  const completed = eatDigits()
    .slice(0, 14)
    .replace(/^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/, '$3.$2.$1 $4:$5:$6');
  const parameters: Record<string, unknown> =
    payment.state === 'completed'
      ? {
          TransactionAmount: payment.amount,
          TransactionReceipt: payment.transactionId,
          B2CRecipientIsRegisteredCustomer: 'Y',
          B2CChargesPaidAccountAvailableFunds: 0,
          ReceiverPartyPublicName: `${payment.phone} - Simulated Recipient`,
          TransactionCompletedDateTime: completed,
          B2CUtilityAccountAvailableFunds: 1_000_000,
          B2CWorkingAccountAvailableFunds: 500_000,
          ...params,
        }
      : params;
  const list = Object.entries(parameters)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([Key, Value]) => ({ Key, Value }));
  return {
    Result: {
      ResultType: payment.state === 'timed_out' ? 1 : 0,
      ResultCode,
      ResultDesc,
      OriginatorConversationID: payment.originatorConversationId,
      ConversationID: payment.conversationId,
      TransactionID: payment.transactionId,
      ...(list.length > 0 && { ResultParameters: { ResultParameter: list } }),
      ReferenceData: { ReferenceItem: { Key: 'QueueTimeoutURL', Value: payment.queueTimeoutUrl } },
    },
  };
}

export function simulatorCallbacks(state: SimulatorState) {
  /** Keeps what was sent (or lost), the newest LIMITS.callbacks. */
  function record(entry: Omit<SentCallback, 'at'>): SentCallback {
    const at = { ...entry, at: new Date().toISOString() };
    state.sent.push(at);
    if (state.sent.length > LIMITS.callbacks) state.sent.shift();
    return at;
  }

  /** Sends a callback (a forged one under its forgery's name: not counted as the request's). */
  async function post(delivery: Delivery, forgery?: string): Promise<SentCallback> {
    const entry = record({ ...delivery, ...(forgery && { forgery }) });
    // A status Result is the query's, not one of the payout's own callbacks.
    const target =
      delivery.kind === 'stk'
        ? state.pushes.get(delivery.id)
        : delivery.kind === 'b2c_status'
          ? undefined
          : state.payments.get(delivery.id);
    if (target && !forgery) target.callbacksSent += 1;
    try {
      // Keep-alive node:http, as a provider's callback sender would pool its connections.
      const response = await request(
        delivery.url,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(delivery.body) },
        5_000,
      );
      entry.status = response.status;
    } catch (error) {
      entry.error = (error as Error).message;
    }
    return entry;
  }

  async function flush(): Promise<void> {
    const due = state.held.reverse();
    state.held = [];
    // One at a time, so the receiver sees exactly the reversed order.
    for (const delivery of due) await post(delivery);
  }

  /** Sends and answers the receiver's HTTP status (an unreachable receiver throws). */
  async function sent(delivery: Delivery, forgery?: string): Promise<number> {
    const entry = await post(delivery, forgery);
    if (entry.status === undefined) throw new Error(entry.error ?? 'not sent');
    return entry.status;
  }

  /** Delivers a decided result as the callback state.mode says at the moment it is due. */
  function dispatch(delivery: Delivery) {
    if (state.mode.chaos) {
      void state.chaos.deliver({
        kind: delivery.kind,
        request: delivery.id,
        send: () => sent(delivery),
        forgeries: mobileMoneyForgeries(state, { stkBody, b2cBody, send: sent }, delivery),
      });
      return;
    }
    switch (state.mode.callbacks) {
      case 'lose':
        record({ ...delivery, lost: true });
        return;
      case 'duplicate':
        void post(delivery).then(() => post(delivery));
        return;
      case 'delay':
        state.timers.later(state.mode.lateCallbackMs, () => post(delivery));
        return;
      case 'reorder':
        if (state.held.length === 0) state.timers.later(state.mode.reorderWindowMs, flush);
        state.held.push(delivery);
        return;
      default:
        void post(delivery);
    }
  }

  const stkDelivery = (push: SimulatedPush, overrides?: Record<string, unknown>): Delivery => ({
    kind: 'stk',
    id: push.checkoutRequestId,
    url: push.callbackUrl,
    body: stkBody(push, overrides),
  });
  const b2cDelivery = (payment: SimulatedPayment, overrides?: Record<string, unknown>): Delivery => ({
    kind: payment.state === 'timed_out' ? 'b2c_timeout' : 'b2c_result',
    id: payment.originatorConversationId,
    url: payment.state === 'timed_out' ? payment.queueTimeoutUrl : payment.resultUrl,
    body: b2cBody(payment, overrides),
  });

  // Decisions

  function decidePush(push: SimulatedPush, callback = true) {
    if (push.state !== 'pending') return;
    push.state = 'final';
    if (push.resultCode === 0) {
      push.receipt = state.receipt();
      push.transactionDate = Number(eatDigits().slice(0, 14));
    }
    if (callback) dispatch(stkDelivery(push));
  }

  function decidePayment(payment: SimulatedPayment, outcome: Outcome | 'queue_timeout', callback = true) {
    if (payment.state !== 'pending') return;
    payment.decidedAt = new Date().toISOString();
    if (outcome === 'queue_timeout') {
      payment.state = 'timed_out';
      payment.resultCode = 'SVC0001';
      payment.resultDesc = 'The request timed out in the queue and was not processed.';
    } else {
      payment.state = outcome.code === 0 ? 'completed' : 'failed';
      payment.resultCode = outcome.code;
      payment.resultDesc = outcome.desc;
    }
    if (callback) dispatch(b2cDelivery(payment));
  }

  /** 'lose' decides at once (nothing will arrive, the status query already knows); else after the delay. */
  const schedule = (decide: (callback?: boolean) => void) => {
    if (state.mode.callbacks === 'lose' && !state.mode.chaos) decide(false);
    else state.timers.later(state.mode.callbackDelayMs, () => decide());
  };

  return { record, post, flush, dispatch, stkDelivery, b2cDelivery, decidePush, decidePayment, schedule };
}
export type SimulatorCallbacks = ReturnType<typeof simulatorCallbacks>;

import { randomUUID } from 'node:crypto';
import { withWrongToken } from '../chaos';
import { type Delivery, digits, eatDigits, PAID, requestId, type SimulatedPayment, type SimulatedPush } from './model';
import type { SimulatorState } from './state';
import { statusResult } from './status';

/**
 * What an attacker can send in this protocol, for chaos mode. The provider signs nothing; our
 * callback URLs carry an unguessable token. So: someone without the token (`wrong_token`: the
 * genuine callback at the address with another token); someone holding the address but not the
 * provider's answer to our request (`unknown_push` / `unknown_payout`: a complete success naming
 * request ids the provider never made, which is also "a success for a request that failed");
 * and someone altering a genuine callback in a way the receiver's rules must catch (a success
 * with another amount, another phone, or a receipt in the wrong form; for a paid push, a refusal,
 * which a status query contradicts). A Transaction Status Result's URL carries a token of its
 * own: besides it, a status from a query the provider never answered (`unknown_query`, paid, or
 * `not_found`, which would release a paid payout), one naming another payout (`other_payout`),
 * and a paid status altered as above. Not sent: a genuine callback's verdict turned around with
 * its ids kept, undetectable in this protocol unless the provider is asked (a payout's status
 * query; for a push, the service's STK_PUSH_CONFIRM_SUCCESS).
 */
type Builders = {
  stkBody(push: SimulatedPush, overrides?: Record<string, unknown>): unknown;
  b2cBody(payment: SimulatedPayment, overrides?: Record<string, unknown>): unknown;
  /** Sends a forged callback, recorded under the forgery's name; answers the receiver's status. */
  send(delivery: Delivery, forgery: string): Promise<number>;
};

/** Another number than `phone` (its last digit changed). */
const otherPhone = (phone: string) => `${phone.slice(0, -1)}${(Number(phone.slice(-1)) + 5) % 10}`;
const otherIds = () => ({
  merchant: `${digits(5)}-${digits(8)}-1`,
  checkout: `ws_CO_${eatDigits().slice(0, 14)}${digits(6)}`,
});

export function mobileMoneyForgeries(
  state: SimulatorState,
  build: Builders,
  delivery: Delivery,
): Record<string, () => Promise<number>> {
  const forge = (name: string, changed: Partial<Delivery>) => () => build.send({ ...delivery, ...changed }, name);
  const wrongToken = { wrong_token: forge('wrong_token', { url: withWrongToken(delivery.url) }) };

  const push = delivery.kind === 'stk' ? state.pushes.get(delivery.id) : undefined;
  if (push) {
    // A paid push as it would read; for a refused one the receipt is one the provider never issued.
    const paid: SimulatedPush = {
      ...push,
      resultCode: 0,
      resultDesc: PAID.desc,
      receipt: push.receipt ?? state.receipt(),
      transactionDate: push.transactionDate ?? Number(eatDigits().slice(0, 14)),
    };
    const ids = otherIds();
    const paidWith = (name: string, items: Record<string, unknown>) =>
      forge(name, { body: build.stkBody(paid, items) });
    return {
      ...wrongToken,
      wrong_amount: paidWith('wrong_amount', { Amount: push.amount + 1 }),
      wrong_phone: paidWith('wrong_phone', { PhoneNumber: Number(otherPhone(push.phone)) }),
      malformed_receipt: paidWith('malformed_receipt', { MpesaReceiptNumber: paid.receipt!.toLowerCase() }),
      unknown_push: forge('unknown_push', {
        body: build.stkBody({ ...paid, checkoutRequestId: ids.checkout, merchantRequestId: ids.merchant }),
      }),
      ...(push.resultCode === 0 && {
        refusal_for_paid: forge('refusal_for_paid', {
          body: build.stkBody({ ...push, resultCode: 1032, resultDesc: 'Request cancelled by user' }),
        }),
      }),
    };
  }

  const payment = delivery.kind === 'stk' ? undefined : state.payments.get(delivery.id);
  if (!payment) return wrongToken;
  const completed: SimulatedPayment = {
    ...payment,
    state: 'completed',
    resultCode: 0,
    resultDesc: PAID.desc,
    decidedAt: payment.decidedAt ?? new Date().toISOString(),
  };
  if (delivery.kind === 'b2c_status') return statusForgeries(state, delivery, completed, forge, wrongToken);
  const success = (name: string, params: Record<string, unknown>, ids: Partial<SimulatedPayment> = {}) =>
    forge(name, {
      kind: 'b2c_result',
      url: payment.resultUrl,
      body: build.b2cBody({ ...completed, ...ids }, params),
    });
  const unknownPayout = success(
    'unknown_payout',
    {},
    { conversationId: `AG_${eatDigits().slice(0, 8)}_${digits(20)}` },
  );
  // A queue timeout's forgeries: no token, or a success for the payout that timed out.
  if (delivery.kind === 'b2c_timeout') return { ...wrongToken, unknown_payout: unknownPayout };
  return {
    ...wrongToken,
    wrong_amount: success('wrong_amount', { TransactionAmount: payment.amount + 1 }),
    wrong_phone: success('wrong_phone', {
      ReceiverPartyPublicName: `${otherPhone(payment.phone)} - Simulated Recipient`,
    }),
    malformed_receipt: success('malformed_receipt', { TransactionReceipt: payment.transactionId.toLowerCase() }),
    unknown_payout: unknownPayout,
  };
}

/** A status Result's forgeries (see above): `completed` is the payout as it would read paid. */
function statusForgeries(
  state: SimulatorState,
  delivery: Delivery,
  completed: SimulatedPayment,
  forge: (name: string, changed: Partial<Delivery>) => () => Promise<number>,
  wrongToken: Record<string, () => Promise<number>>,
): Record<string, () => Promise<number>> {
  const asked = state.statusQueries.findLast((q) => q.resultUrl === delivery.url);
  if (!asked) return wrongToken;
  const query = { ...asked, initiatorValid: true };
  const otherQuery = {
    originatorConversationId: requestId(),
    conversationId: `AG_${eatDigits().slice(0, 8)}_${digits(20)}`,
  };
  const paid = (name: string, params: Record<string, unknown>, ids = {}) =>
    forge(name, { body: statusResult(state, query, completed, params, ids).body });
  return {
    ...wrongToken,
    unknown_query: paid('unknown_query', {}, otherQuery),
    not_found: forge('not_found', { body: statusResult(state, query, undefined, {}, otherQuery).body }),
    other_payout: paid('other_payout', { OriginatorConversationID: randomUUID() }),
    wrong_amount: paid('wrong_amount', { Amount: String(completed.amount + 1) }),
    wrong_phone: paid('wrong_phone', { CreditPartyName: `${otherPhone(completed.phone)} - Simulated Recipient` }),
    malformed_receipt: paid('malformed_receipt', { ReceiptNo: completed.transactionId.toLowerCase() }),
  };
}

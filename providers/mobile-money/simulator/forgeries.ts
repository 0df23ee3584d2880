import { withWrongToken } from '../../simulator-chaos';
import type { Delivery } from './callbacks';
import { digits, eatDigits, PAID, type SimulatedPayment, type SimulatedPush } from './model';
import type { SimulatorState } from './state';

/**
 * What an attacker can send in this protocol, for chaos mode. The provider signs nothing; our
 * callback URLs carry an unguessable token. So: someone without the token (`wrong_token`: the
 * genuine callback at the address with another token); someone holding the address but not the
 * provider's answer to our request (`unknown_push` / `unknown_payout`: a complete success naming
 * request ids the provider never made, which is also "a success for a request that failed");
 * and someone altering a genuine callback in a way the receiver's rules must catch (a success
 * with another amount, another phone, or a receipt in the wrong form; for a paid push, a refusal,
 * which a status query contradicts). Not sent: a genuine callback's verdict turned around with
 * its ids kept, undetectable in this protocol for a payout (there is no query) and for a push
 * unless every success is confirmed (the service's STK_PUSH_CONFIRM_SUCCESS).
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
  const completed: SimulatedPayment = { ...payment, state: 'completed', resultCode: 0, resultDesc: PAID.desc };
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

import { z } from 'zod';
import {
  ERROR_CODES,
  type MobileMoneyClient,
  type MobileMoneyClientOptions,
  providerTimestamp,
  stkPassword,
  toProviderPhone,
} from './protocol';
import {
  bounded,
  errorEnvelope,
  failure,
  type MobileMoneyTransport,
  ok,
  providerValue,
  unreadable,
  wholeShillings,
} from './transport';

/**
 * Collections: the push prompt (STK push) and its status query, both signed with the shortcode's
 * password of the moment. ./client.ts composes them with the payouts over ./transport.ts.
 */

const pushAnswer = z.object({
  MerchantRequestID: z.string(),
  CheckoutRequestID: z.string().min(1),
  ResponseCode: providerValue,
  CustomerMessage: z.string().optional(),
  ResponseDescription: z.string().optional(),
});
const queryAnswer = z.object({ ResultCode: providerValue, ResultDesc: z.string().optional() });

export function createCollections(
  transport: MobileMoneyTransport,
  options: Pick<MobileMoneyClientOptions, 'shortCode' | 'passkey' | 'clock'>,
): Pick<MobileMoneyClient, 'stkPush' | 'stkQuery'> {
  const { shortCode, passkey } = options;
  const clock = options.clock ?? (() => new Date());
  const { post } = transport;

  function credentials() {
    const timestamp = providerTimestamp(clock());
    return { BusinessShortCode: shortCode, Password: stkPassword(shortCode, passkey, timestamp), Timestamp: timestamp };
  }

  return {
    async stkPush(request) {
      const amount = wholeShillings(request.amount);
      const phone = toProviderPhone(request.phone);
      const buyGoods = request.transactionType === 'CustomerBuyGoodsOnline';
      if (buyGoods !== (request.till !== undefined))
        throw new RangeError('till is required for CustomerBuyGoodsOnline and only for it');
      const answer = await post('stkPush', '/mpesa/stkpush/v1/processrequest', {
        ...credentials(),
        TransactionType: request.transactionType,
        Amount: amount,
        PartyA: phone,
        PartyB: buyGoods ? request.till : shortCode,
        PhoneNumber: phone,
        CallBackURL: request.callbackUrl,
        AccountReference: bounded(request.accountReference, 12, 'accountReference'),
        TransactionDesc: bounded(request.description, 13, 'description'),
      });
      if (!ok(answer)) throw failure('stkPush', answer);
      const parsed = pushAnswer.safeParse(answer.body);
      if (!parsed.success) throw unreadable('stkPush', answer);
      return {
        merchantRequestId: parsed.data.MerchantRequestID,
        checkoutRequestId: parsed.data.CheckoutRequestID,
        responseCode: String(parsed.data.ResponseCode),
        customerMessage: parsed.data.CustomerMessage ?? parsed.data.ResponseDescription ?? '',
      };
    },

    async stkQuery(checkoutRequestId) {
      const answer = await post('stkQuery', '/mpesa/stkpushquery/v1/query', {
        ...credentials(),
        CheckoutRequestID: checkoutRequestId,
      });
      const envelope = errorEnvelope.safeParse(answer.body);
      // "Being processed" is the pending state, not a failure; the code alone also covers merchant errors.
      if (
        answer.status === 500 &&
        envelope.success &&
        envelope.data.errorCode === ERROR_CODES.processing &&
        /being processed/i.test(envelope.data.errorMessage ?? '')
      ) {
        return { state: 'pending' };
      }
      if (!ok(answer)) throw failure('stkQuery', answer);
      const parsed = queryAnswer.safeParse(answer.body);
      if (!parsed.success) throw unreadable('stkQuery', answer);
      const resultCode = String(parsed.data.ResultCode);
      // Daraja has also been seen answering 200 with 4999 "still under processing": still pending.
      if (resultCode === '4999') return { state: 'pending' };
      return { state: 'final', resultCode, resultDesc: parsed.data.ResultDesc ?? '' };
    },
  };
}

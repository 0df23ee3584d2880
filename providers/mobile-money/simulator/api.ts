import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import Router from '@koa/router';
import { isKenyanMobile } from '../../../domain/identifiers';
import type { SimulatorCallbacks } from './callbacks';
import {
  B2C_BY_LAST_DIGIT,
  BAD_REQUEST,
  digits,
  eatDigits,
  INVALID_INITIATOR,
  INVALID_TOKEN,
  isUrl,
  LIMITS,
  PAID,
  PROCESSING,
  remember,
  requestId,
  type SimulatedPayment,
  type SimulatedPush,
  STK_BY_LAST_DIGIT,
  text,
  wholeAmount,
} from './model';
import type { SimulatorState } from './state';

/** Answers as the provider does: `{requestId, errorCode, errorMessage}` with its HTTP status. */
export const reject = (ctx: Context, status: number, errorCode: string, errorMessage: string) => {
  ctx.status = status;
  ctx.body = { requestId: requestId(), errorCode, errorMessage };
};

/**
 * The provider's API: OAuth, push prompt, its status query and B2C, with the provider's checks
 * (Basic and Bearer auth, Password, required fields) and error envelopes.
 */
export function providerApi(state: SimulatorState, callbacks: SimulatorCallbacks): Router {
  const { options } = state;
  const { shortCode, passkey } = options;
  const b2cShortCode = options.b2cShortCode ?? shortCode;
  const basic = `Basic ${Buffer.from(`${options.consumerKey}:${options.consumerSecret}`).toString('base64')}`;
  const { schedule, decidePush, decidePayment } = callbacks;

  const reject = (ctx: Context, status: number, errorCode: string, errorMessage: string) => {
    ctx.status = status;
    ctx.body = { requestId: requestId(), errorCode, errorMessage };
  };
  const authorized = (ctx: Context) => {
    const token = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
    const expiresAt = token === undefined ? undefined : state.tokens.get(token);
    if (expiresAt !== undefined && expiresAt > Date.now()) return true;
    reject(ctx, 404, INVALID_TOKEN, 'Invalid Access Token');
    return false;
  };
  /** Runs [field, valid] checks in order and answers the first failure Daraja-style. */
  const validate = (ctx: Context, checks: [string, boolean][]) => {
    const failed = checks.find(([, valid]) => !valid);
    if (failed) reject(ctx, 400, BAD_REQUEST, `Bad Request - Invalid ${failed[0]}`);
    return !failed;
  };
  const passwordChecks = (body: Record<string, unknown>): [string, boolean][] => [
    ['BusinessShortCode', String(body.BusinessShortCode) === shortCode],
    ['Timestamp', typeof body.Timestamp === 'string' && /^\d{14}$/.test(body.Timestamp)],
    ['Password', body.Password === Buffer.from(`${shortCode}${passkey}${String(body.Timestamp)}`).toString('base64')],
  ];
  /** Holds the request unanswered until hangMs or until the client gives up. */
  const hang = (ctx: Context) => state.timers.hold(state.mode.hangMs, (cancel) => ctx.res.once('close', cancel));

  const api = new Router();
  api.get('/oauth/v1/generate', (ctx) => {
    if (state.mode.failOAuth) return reject(ctx, 503, '503.001.01', 'Service Unavailable (simulated)');
    if (ctx.query.grant_type !== 'client_credentials')
      return reject(ctx, 400, '400.008.02', 'Invalid grant type passed');
    if (ctx.get('authorization') !== basic) return reject(ctx, 400, '400.008.01', 'Invalid Authentication passed');
    ctx.body = { access_token: state.issueToken(), expires_in: String(state.mode.tokenTtlSeconds) };
  });

  api.post('/mpesa/stkpush/v1/processrequest', async (ctx) => {
    if (!authorized(ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const buyGoods = body.TransactionType === 'CustomerBuyGoodsOnline';
    const phone = String(body.PhoneNumber);
    const amount = wholeAmount(body.Amount);
    const valid = validate(ctx, [
      ...passwordChecks(body),
      ['TransactionType', buyGoods || body.TransactionType === 'CustomerPayBillOnline'],
      ['Amount', amount !== undefined],
      ['PhoneNumber', isKenyanMobile(`+${phone}`)],
      ['PartyA', String(body.PartyA) === phone],
      ['PartyB', buyGoods ? /^\d{5,8}$/.test(String(body.PartyB)) : String(body.PartyB) === shortCode],
      ['CallBackURL', isUrl(body.CallBackURL)],
      ['AccountReference', text(body.AccountReference, 12)],
      ['TransactionDesc', text(body.TransactionDesc, 13)],
    ]);
    if (!valid || amount === undefined) return;
    const failWith = state.mode.pushFailWith;
    const takesEffect =
      failWith === 0 || ((failWith === 'timeout' || failWith >= 500) && state.mode.failedPushesTakeEffect);
    let checkoutRequestId: string;
    do checkoutRequestId = `ws_CO_${eatDigits().slice(0, 14)}${digits(6)}`;
    while (state.pushes.has(checkoutRequestId));
    const outcome = STK_BY_LAST_DIGIT[phone.slice(-1)] ?? PAID;
    const push: SimulatedPush = {
      checkoutRequestId,
      merchantRequestId: `${digits(5)}-${digits(8)}-1`,
      phone,
      amount,
      accountReference: String(body.AccountReference),
      description: String(body.TransactionDesc),
      transactionType: String(body.TransactionType),
      partyB: String(body.PartyB),
      callbackUrl: String(body.CallBackURL),
      receivedAt: new Date().toISOString(),
      answeredWith: failWith === 0 ? 200 : failWith,
      state: 'pending',
      resultCode: outcome.code,
      resultDesc: outcome.desc,
      queries: 0,
      callbacksSent: 0,
    };
    if (takesEffect) {
      remember(state.pushes, checkoutRequestId, push, LIMITS.records);
      schedule((callback) => decidePush(push, callback));
    }
    if (failWith === 'timeout') {
      await hang(ctx);
      return reject(ctx, 504, '504.001.01', 'Gateway Timeout (simulated)');
    }
    if (failWith !== 0) return reject(ctx, failWith, `${failWith}.001.01`, 'Simulated failure');
    ctx.body = {
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: checkoutRequestId,
      ResponseCode: '0',
      ResponseDescription: 'Success. Request accepted for processing',
      CustomerMessage: 'Success. Request accepted for processing',
    };
  });

  api.post('/mpesa/stkpushquery/v1/query', (ctx) => {
    if (!authorized(ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const push = state.pushes.get(String(body.CheckoutRequestID));
    if (!validate(ctx, [...passwordChecks(body), ['CheckoutRequestID', push !== undefined]]) || !push) return;
    push.queries += 1;
    const answered = state.processingAnswered.get(push.checkoutRequestId) ?? 0;
    const forced = answered < state.mode.processingQueries;
    if (forced) remember(state.processingAnswered, push.checkoutRequestId, answered + 1, LIMITS.records);
    if (forced || push.state === 'pending' || Date.now() < Date.parse(push.receivedAt) + state.mode.processingForMs) {
      return reject(ctx, 500, PROCESSING, 'The transaction is being processed');
    }
    ctx.body = {
      ResponseCode: '0',
      ResponseDescription: 'The service request has been accepted successsfully',
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: String(push.resultCode),
      ResultDesc: push.resultDesc,
    };
  });

  api.post('/mpesa/b2c/v3/paymentrequest', (ctx) => {
    if (!authorized(ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const phone = String(body.PartyB);
    const amount = wholeAmount(body.Amount);
    const valid = validate(ctx, [
      ['OriginatorConversationID', text(body.OriginatorConversationID, 128)],
      ['InitiatorName', text(body.InitiatorName, 100)],
      ['SecurityCredential', text(body.SecurityCredential, 2048)],
      ['CommandID', ['BusinessPayment', 'SalaryPayment', 'PromotionPayment'].includes(String(body.CommandID))],
      ['Amount', amount !== undefined],
      ['PartyA', String(body.PartyA) === b2cShortCode],
      ['PartyB', isKenyanMobile(`+${phone}`)],
      ['Remarks', text(body.Remarks, 100)],
      ['QueueTimeOutURL', isUrl(body.QueueTimeOutURL)],
      ['ResultURL', isUrl(body.ResultURL)],
      ['Occasion', body.Occasion === undefined || (typeof body.Occasion === 'string' && body.Occasion.length <= 100)],
    ]);
    if (!valid || amount === undefined) return;
    if (state.mode.payoutFailWith !== 0)
      return reject(ctx, state.mode.payoutFailWith, `${state.mode.payoutFailWith}.001.01`, 'Simulated failure');
    const originatorConversationId = String(body.OriginatorConversationID);
    if (state.originatorIds.has(originatorConversationId))
      return reject(ctx, 400, BAD_REQUEST, 'Bad Request - Duplicate OriginatorConversationID');
    remember(state.originatorIds, originatorConversationId, true, LIMITS.ids);
    const payment: SimulatedPayment = {
      originatorConversationId,
      conversationId: `AG_${eatDigits().slice(0, 8)}_${randomBytes(10).toString('hex')}`,
      phone,
      amount,
      commandId: String(body.CommandID),
      remarks: String(body.Remarks),
      ...(typeof body.Occasion === 'string' && { occasion: body.Occasion }),
      resultUrl: String(body.ResultURL),
      queueTimeoutUrl: String(body.QueueTimeOutURL),
      receivedAt: new Date().toISOString(),
      state: 'pending',
      resultCode: '',
      resultDesc: '',
      transactionId: state.receipt(),
      callbacksSent: 0,
    };
    remember(state.payments, originatorConversationId, payment, LIMITS.records);
    const wrongInitiator =
      (options.initiatorName !== undefined && body.InitiatorName !== options.initiatorName) ||
      (options.securityCredential !== undefined && body.SecurityCredential !== options.securityCredential);
    const outcome = wrongInitiator ? INVALID_INITIATOR : (B2C_BY_LAST_DIGIT[phone.slice(-1)] ?? PAID);
    schedule((callback) => decidePayment(payment, outcome, callback));
    ctx.body = {
      ConversationID: payment.conversationId,
      OriginatorConversationID: originatorConversationId,
      ResponseCode: '0',
      ResponseDescription: 'Accept the service request successfully.',
    };
  });
  return api;
}

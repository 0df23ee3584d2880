import type { Context } from 'koa';
import Router from '@koa/router';
import { isKenyanMobile } from '../../domain/identifiers';
import { b2cRoutes } from './b2c';
import type { SimulatorCallbacks } from './callbacks';
import { authorized, reject, validate, str } from './checks';
import {
  digits,
  eatDigits,
  isUrl,
  LIMITS,
  PAID,
  PROCESSING,
  remember,
  type SimulatedPush,
  STK_BY_LAST_DIGIT,
  text,
  wholeAmount,
} from './model';
import type { SimulatorState } from './state';
import { statusRoutes } from './status';

/**
 * The provider's API: OAuth, push prompt, its status query, B2C (./b2c.ts) and the Transaction
 * Status query (./status.ts), with the
 * provider's checks (Basic and Bearer auth, Password, required fields) and error envelopes.
 */
export function providerApi(state: SimulatorState, callbacks: SimulatorCallbacks): Router {
  const { options } = state;
  const { shortCode, passkey } = options;
  const basic = `Basic ${Buffer.from(`${options.consumerKey}:${options.consumerSecret}`).toString('base64')}`;
  const { schedule, decidePush } = callbacks;
  const passwordChecks = (body: Record<string, unknown>): [string, boolean][] => [
    ['BusinessShortCode', str(body.BusinessShortCode) === shortCode],
    ['Timestamp', typeof body.Timestamp === 'string' && /^\d{14}$/.test(body.Timestamp)],
    ['Password', body.Password === Buffer.from(`${shortCode}${passkey}${str(body.Timestamp)}`).toString('base64')],
  ];
  /** Holds the request unanswered until hangMs or until the client gives up. */
  const hang = (ctx: Context) => state.timers.hold(state.mode.hangMs, (cancel) => ctx.res.once('close', cancel));

  const api = new Router();
  api.get('/oauth/v1/generate', (ctx) => {
    if (state.mode.failOAuth) return reject(ctx, 503, '503.001.01', 'Service Unavailable (simulated)');
    if (ctx.query.grant_type !== 'client_credentials')
      return reject(ctx, 400, '400.008.02', 'Invalid grant type passed');
    if (ctx.get('authorization') !== basic) return reject(ctx, 400, '400.008.01', 'Invalid Authentication passed');
    const token = state.issueToken();
    if (!token) return reject(ctx, 500, '500.003.02', 'Spike arrest violation');
    ctx.body = { access_token: token, expires_in: String(state.mode.tokenTtlSeconds) };
  });

  api.post('/mpesa/stkpush/v1/processrequest', async (ctx) => {
    if (!authorized(state, ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const buyGoods = body.TransactionType === 'CustomerBuyGoodsOnline';
    const phone = str(body.PhoneNumber);
    const amount = wholeAmount(body.Amount);
    const valid = validate(ctx, [
      ...passwordChecks(body),
      ['TransactionType', buyGoods || body.TransactionType === 'CustomerPayBillOnline'],
      ['Amount', amount !== undefined],
      ['PhoneNumber', isKenyanMobile(`+${phone}`)],
      ['PartyA', str(body.PartyA) === phone],
      ['PartyB', buyGoods ? /^\d{5,8}$/.test(str(body.PartyB)) : str(body.PartyB) === shortCode],
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
      accountReference: str(body.AccountReference),
      description: str(body.TransactionDesc),
      transactionType: str(body.TransactionType),
      partyB: str(body.PartyB),
      callbackUrl: str(body.CallBackURL),
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
    if (!authorized(state, ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const push = state.pushes.get(str(body.CheckoutRequestID));
    if (!validate(ctx, [...passwordChecks(body), ['CheckoutRequestID', push !== undefined]]) || !push) return;
    push.queries += 1;
    const answered = state.processingAnswered.get(push.checkoutRequestId) ?? 0;
    const forced = answered < state.mode.processingQueries;
    if (forced) remember(state.processingAnswered, push.checkoutRequestId, answered + 1, LIMITS.records);
    if (forced || push.state === 'pending' || Date.now() < Date.parse(push.receivedAt) + state.mode.processingForMs) {
      return reject(ctx, 500, PROCESSING, 'The transaction is being processed');
    }
    // Chaos mode: callbacks held until this query was answered go now.
    state.chaos.queried(push.checkoutRequestId);
    ctx.body = {
      ResponseCode: '0',
      ResponseDescription: 'The service request has been accepted successsfully',
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: String(push.resultCode),
      ResultDesc: push.resultDesc,
    };
  });

  b2cRoutes(api, state, callbacks);
  statusRoutes(api, state, callbacks);
  return api;
}

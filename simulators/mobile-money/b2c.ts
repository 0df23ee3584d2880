import { randomBytes } from 'node:crypto';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { isKenyanMobile } from '../../domain/identifiers';
import type { SimulatorCallbacks } from './callbacks';
import { authorized, initiatorValid, reject, validate, str } from './checks';
import {
  BAD_REQUEST,
  eatDigits,
  isUrl,
  LIMITS,
  payoutOutcome,
  remember,
  requestId,
  type SimulatedPayment,
  text,
  wholeAmount,
} from './model';
import type { SimulatorState } from './state';

const COMMANDS = ['BusinessPayment', 'SalaryPayment', 'PromotionPayment'];

/**
 * Send money (B2C) at both paths the provider serves: v3 takes the caller's
 * OriginatorConversationID, echoes it and refuses a repeat; the legacy v1 (still called by
 * widely used clients) takes none and gets one made by the provider. Both read `Occasion` or the
 * provider samples' `Occassion`. The SecurityCredential is decrypted, not compared: one that
 * does not decrypt to the initiator password is accepted here and results in 2001.
 */
export function b2cRoutes(api: Router, state: SimulatorState, callbacks: SimulatorCallbacks): void {
  const { options } = state;
  const b2cShortCode = options.b2cShortCode ?? options.shortCode;

  const paymentRequest = (version: SimulatedPayment['api']) => async (ctx: Context) => {
    if (!authorized(state, ctx)) return;
    const body = ctx.request.body as Record<string, unknown>;
    const phone = str(body.PartyB);
    const amount = wholeAmount(body.Amount);
    // Either spelling, named in a refusal as it was sent.
    const occasionField = body.Occasion === undefined && body.Occassion !== undefined ? 'Occassion' : 'Occasion';
    const occasion = body[occasionField];
    const valid = validate(ctx, [
      ...(version === 'v3'
        ? [['OriginatorConversationID', text(body.OriginatorConversationID, 128)] as [string, boolean]]
        : []),
      ['InitiatorName', text(body.InitiatorName, 100)],
      ['SecurityCredential', text(body.SecurityCredential, 2048)],
      ['CommandID', COMMANDS.includes(str(body.CommandID))],
      ['Amount', amount !== undefined],
      ['PartyA', str(body.PartyA) === b2cShortCode],
      ['PartyB', isKenyanMobile(`+${phone}`)],
      ['Remarks', text(body.Remarks, 100)],
      ['QueueTimeOutURL', isUrl(body.QueueTimeOutURL)],
      ['ResultURL', isUrl(body.ResultURL)],
      [occasionField, occasion === undefined || (typeof occasion === 'string' && occasion.length <= 100)],
    ]);
    if (!valid || amount === undefined) return;
    if (state.mode.payoutFailWith !== 0)
      return reject(ctx, state.mode.payoutFailWith, `${state.mode.payoutFailWith}.001.01`, 'Simulated failure');
    let originatorConversationId: string;
    if (version === 'v3') {
      originatorConversationId = str(body.OriginatorConversationID);
      if (state.originatorIds.has(originatorConversationId))
        return reject(ctx, 400, BAD_REQUEST, 'Bad Request - Duplicate OriginatorConversationID');
    } else {
      do originatorConversationId = requestId();
      while (state.originatorIds.has(originatorConversationId));
    }
    remember(state.originatorIds, originatorConversationId, true, LIMITS.ids);
    const payment: SimulatedPayment = {
      api: version,
      originatorConversationId,
      conversationId: `AG_${eatDigits().slice(0, 8)}_${randomBytes(10).toString('hex')}`,
      initiatorValid: initiatorValid(state, body, 'InitiatorName'),
      phone,
      amount,
      commandId: str(body.CommandID),
      remarks: str(body.Remarks),
      ...(typeof occasion === 'string' && { occasion }),
      resultUrl: str(body.ResultURL),
      queueTimeoutUrl: str(body.QueueTimeOutURL),
      receivedAt: new Date().toISOString(),
      state: 'pending',
      resultCode: '',
      resultDesc: '',
      transactionId: state.receipt(),
      callbacksSent: 0,
    };
    remember(state.payments, originatorConversationId, payment, LIMITS.records);
    callbacks.schedule((callback) => callbacks.decidePayment(payment, payoutOutcome(payment), callback));
    // A slow answer: the result may reach the caller before the answer does.
    if (state.mode.payoutAnswerDelayMs > 0)
      await state.timers.hold(state.mode.payoutAnswerDelayMs, (cancel) => ctx.res.once('close', cancel));
    ctx.body = {
      ConversationID: payment.conversationId,
      OriginatorConversationID: originatorConversationId,
      ResponseCode: '0',
      ResponseDescription: 'Accept the service request successfully.',
    };
  };

  api.post('/mpesa/b2c/v3/paymentrequest', paymentRequest('v3'));
  api.post('/mpesa/b2c/v1/paymentrequest', paymentRequest('v1'));
}

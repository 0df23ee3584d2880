import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import { z } from 'zod';
import { request } from '../http';

/**
 * Simulator of the mobile-money provider (protocols/mobile-money.md, Daraja-like) for
 * development and tests: OAuth, push prompt, status query and B2C with the provider's checks and
 * error envelopes `{requestId, errorCode, errorMessage}`, callbacks after a delay, and a control
 * API under /_control to lose, duplicate, delay or reorder callbacks, hold status queries at
 * "being processed", fail OAuth or pushes, and read what was received and sent.
 *
 * Outcomes, by the last digit of the phone number:
 *
 *   digit | push (stkCallback ResultCode)          | B2C (Result ResultCode)
 *   ------+----------------------------------------+------------------------------------------
 *   0     | 0 paid, with CallbackMetadata          | 0 paid, with ResultParameters
 *   1     | 1032 cancelled by the user             | 0 paid
 *   2     | 1037 phone unreachable                 | 0 paid
 *   3     | 1 insufficient balance                 | 1 insufficient funds in the utility account
 *   4     | 2001 wrong PIN                         | 2001 initiator information invalid
 *   5     | 1019 expired                           | 0 paid
 *   6     | "SFC_IC0003" (a string ResultCode)     | 0 paid
 *   7     | 0 paid                                 | queue timeout, sent to QueueTimeOutURL
 *   8     | 0 paid                                 | 2040 recipient not a registered customer
 *   9     | 0 paid                                 | 0 paid
 *
 * *Assumed* (no public source shows them): a repeated OriginatorConversationID is refused with
 * 400 / 400.002.02 "Bad Request - Duplicate OriginatorConversationID"; a wrong Password is 400 /
 * 400.002.02 "Bad Request - Invalid Password"; an unknown CheckoutRequestID in a status query is
 * 400 / 400.002.02; an invalid token is HTTP 404 / 404.001.03; a queue timeout is a Result with
 * ResultType 1 and ResultCode "SVC0001"; simulated failures use `<status>.001.01`.
 */
export type CallbackMode = 'normal' | 'lose' | 'duplicate' | 'delay' | 'reorder';

export interface MobileMoneySimulatorOptions {
  consumerKey: string;
  consumerSecret: string;
  shortCode: string;
  passkey: string;
  /** B2C PartyA when it differs from `shortCode`. */
  b2cShortCode?: string;
  /** When given, a B2C with other initiator credentials results in 2001 (as the provider does). */
  initiatorName?: string;
  securityCredential?: string;
  port?: number;
  callbackDelayMs?: number;
}

const modeSchema = z
  .object({
    callbacks: z.enum(['normal', 'lose', 'duplicate', 'delay', 'reorder']),
    /** From a request to its decision and callback. */
    callbackDelayMs: z.number().int().min(0),
    /** 'delay' mode: how much later than the decision the callback arrives. */
    lateCallbackMs: z.number().int().min(0),
    /** 'reorder' mode: callbacks due within this window are held, then sent last-first. */
    reorderWindowMs: z.number().int().min(0),
    /** The next N status queries of each push answer "being processed" (counted from this change). */
    processingQueries: z.number().int().min(0),
    /** Status queries answer "being processed" until this long after the push. */
    processingForMs: z.number().int().min(0),
    failOAuth: z.boolean(),
    /** 0: answer pushes normally; an HTTP status; or 'timeout': hang past the client's timeout. */
    pushFailWith: z.union([z.literal(0), z.number().int().min(400).max(599), z.literal('timeout')]),
    /** 0: answer payouts normally; or an HTTP status to refuse them with (the payment is not made). */
    payoutFailWith: z.union([z.literal(0), z.number().int().min(400).max(599)]),
    /** A push answered 5xx or 'timeout' was still delivered to the phone: the indeterminate case. */
    failedPushesTakeEffect: z.boolean(),
    hangMs: z.number().int().min(0),
    tokenTtlSeconds: z.number().int().min(1),
  })
  .strict();
export type SimulatorMode = z.infer<typeof modeSchema>;

export interface SimulatedPush {
  checkoutRequestId: string;
  merchantRequestId: string;
  phone: string;
  amount: number;
  accountReference: string;
  description: string;
  transactionType: string;
  partyB: string;
  callbackUrl: string;
  receivedAt: string;
  /** What the pusher was told: 200, a simulated failure status, or 'timeout'. */
  answeredWith: number | 'timeout';
  state: 'pending' | 'final';
  /** The decided (or, while pending, planned) result. */
  resultCode: number | string;
  resultDesc: string;
  receipt?: string;
  transactionDate?: number;
  queries: number;
  callbacksSent: number;
}

export interface SimulatedPayment {
  originatorConversationId: string;
  conversationId: string;
  phone: string;
  amount: number;
  commandId: string;
  remarks: string;
  occasion?: string;
  resultUrl: string;
  queueTimeoutUrl: string;
  receivedAt: string;
  state: 'pending' | 'completed' | 'failed' | 'timed_out';
  resultCode: number | string;
  resultDesc: string;
  transactionId: string;
  callbacksSent: number;
}

export interface SentCallback {
  kind: 'stk' | 'b2c_result' | 'b2c_timeout';
  /** CheckoutRequestID, or OriginatorConversationID for B2C. */
  id: string;
  url: string;
  at: string;
  /** The receiver's HTTP answer; absent when lost or unreachable. */
  status?: number;
  error?: string;
  lost?: boolean;
  body: unknown;
}

export interface RunningMobileMoneySimulator {
  url: string;
  control: {
    reset(): void;
    setMode(patch: Partial<SimulatorMode>): SimulatorMode;
    pushes(): SimulatedPush[];
    payments(): SimulatedPayment[];
    callbacks(): SentCallback[];
    /** Sends held 'reorder' callbacks now, last-first. */
    flush(): Promise<void>;
    /** Invalidates every issued token (clients must recover through 404.001.03). */
    revokeTokens(): void;
  };
  close(): Promise<void>;
}

interface Outcome {
  code: number | string;
  desc: string;
}
const PAID: Outcome = { code: 0, desc: 'The service request is processed successfully.' };
const STK_BY_LAST_DIGIT: Record<string, Outcome> = {
  '1': { code: 1032, desc: 'Request cancelled by user' },
  '2': { code: 1037, desc: 'DS timeout user cannot be reached' },
  '3': { code: 1, desc: 'The balance is insufficient for the transaction' },
  '4': { code: 2001, desc: 'The initiator information is invalid.' },
  '5': { code: 1019, desc: 'Transaction has expired' },
  '6': { code: 'SFC_IC0003', desc: 'Unable to process the request (simulated string ResultCode)' },
};
const B2C_BY_LAST_DIGIT: Record<string, Outcome | 'queue_timeout'> = {
  '3': { code: 1, desc: 'The balance is insufficient for the transaction.' },
  '4': { code: 2001, desc: 'The initiator information is invalid.' },
  '7': 'queue_timeout',
  '8': { code: 2040, desc: "Credit Party customer type (Unregistered or Registered Customer) can't be supported by the service." },
};
const INVALID_INITIATOR: Outcome = { code: 2001, desc: 'The initiator information is invalid.' };

const BAD_REQUEST = '400.002.02';
const INVALID_TOKEN = '404.001.03';
const PROCESSING = '500.001.1001';
/** State is kept in memory and bounded, oldest forgotten first. */
const LIMITS = { records: 1000, callbacks: 500, ids: 10_000, tokens: 100 };

const PHONE = /^254[17]\d{8}$/;
const EAT_OFFSET_MS = 3 * 60 * 60 * 1000;
/** East Africa Time digits, YYYYMMDDHHmmssSSS. */
const eatDigits = (at = new Date()) => new Date(at.getTime() + EAT_OFFSET_MS).toISOString().replace(/\D/g, '');
const digits = (n: number) => Array.from({ length: n }, () => randomInt(10)).join('');
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const requestId = () => `${digits(5)}-${digits(8)}-1`;

function remember<K, V>(map: Map<K, V>, key: K, value: V, cap: number) {
  map.delete(key);
  map.set(key, value);
  while (map.size > cap) map.delete(map.keys().next().value as K);
}

const isUrl = (value: unknown) => typeof value === 'string' && /^https?:\/\/[^\s]+$/.test(value) && URL.canParse(value);
const text = (value: unknown, max: number) => typeof value === 'string' && value.length >= 1 && value.length <= max;
/** Amounts may come as a number or a digit string; either way a positive whole number. */
const wholeAmount = (value: unknown) => {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
};

export async function startMobileMoneySimulator(options: MobileMoneySimulatorOptions): Promise<RunningMobileMoneySimulator> {
  const { shortCode, passkey } = options;
  const b2cShortCode = options.b2cShortCode ?? shortCode;
  const basic = `Basic ${Buffer.from(`${options.consumerKey}:${options.consumerSecret}`).toString('base64')}`;
  const defaults = (): SimulatorMode => ({
    callbacks: 'normal',
    callbackDelayMs: options.callbackDelayMs ?? 50,
    lateCallbackMs: 2_000,
    reorderWindowMs: 250,
    processingQueries: 0,
    processingForMs: 0,
    failOAuth: false,
    pushFailWith: 0,
    payoutFailWith: 0,
    failedPushesTakeEffect: true,
    hangMs: 60_000,
    tokenTtlSeconds: 3599,
  });
  let mode = defaults();
  const tokens = new Map<string, number>();
  const pushes = new Map<string, SimulatedPush>();
  const payments = new Map<string, SimulatedPayment>();
  /** Every OriginatorConversationID accepted, kept longer than the payments themselves. */
  const originatorIds = new Map<string, true>();
  const receipts = new Map<string, true>();
  /** "Being processed" answers already given per push since processingQueries was set. */
  const processingAnswered = new Map<string, number>();
  const sent: SentCallback[] = [];
  let held: Delivery[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number, work: () => unknown) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      void Promise.resolve().then(work).catch(() => {});
    }, ms);
    timers.add(timer);
  };

  function receipt(): string {
    for (;;) {
      const candidate = `SIM${Array.from({ length: 7 }, () => ALNUM[randomInt(ALNUM.length)]).join('')}`;
      if (!receipts.has(candidate)) {
        remember(receipts, candidate, true, LIMITS.ids);
        return candidate;
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Callbacks

  interface Delivery {
    kind: SentCallback['kind'];
    id: string;
    url: string;
    body: unknown;
  }

  async function post(delivery: Delivery): Promise<SentCallback> {
    const entry: SentCallback = { ...delivery, at: new Date().toISOString() };
    sent.push(entry);
    if (sent.length > LIMITS.callbacks) sent.shift();
    if (delivery.kind === 'stk') {
      const push = pushes.get(delivery.id);
      if (push) push.callbacksSent += 1;
    } else {
      const payment = payments.get(delivery.id);
      if (payment) payment.callbacksSent += 1;
    }
    try {
      // Keep-alive node:http, as a provider's callback sender would pool its connections.
      const response = await request(delivery.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(delivery.body) }, 5_000);
      entry.status = response.status;
    } catch (error) {
      entry.error = (error as Error).message;
    }
    return entry;
  }

  async function flush(): Promise<void> {
    const due = held.reverse();
    held = [];
    // One at a time, so the receiver sees exactly the reversed order.
    for (const delivery of due) await post(delivery);
  }

  /** Delivers a decided result as the callback mode says at the moment it is due. */
  function dispatch(delivery: Delivery) {
    switch (mode.callbacks) {
      case 'lose':
        sent.push({ ...delivery, at: new Date().toISOString(), lost: true });
        if (sent.length > LIMITS.callbacks) sent.shift();
        return;
      case 'duplicate':
        void post(delivery).then(() => post(delivery));
        return;
      case 'delay':
        later(mode.lateCallbackMs, () => post(delivery));
        return;
      case 'reorder':
        if (held.length === 0) later(mode.reorderWindowMs, flush);
        held.push(delivery);
        return;
      default:
        void post(delivery);
    }
  }

  function stkBody(push: SimulatedPush, overrides: Record<string, unknown> = {}) {
    const { ResultCode = push.resultCode, ResultDesc = push.resultDesc, ...items } = overrides;
    const paid = push.resultCode === 0 || push.resultCode === '0';
    const metadata: Record<string, unknown> = paid
      ? { Amount: push.amount, MpesaReceiptNumber: push.receipt, Balance: undefined, TransactionDate: push.transactionDate, PhoneNumber: Number(push.phone), ...items }
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

  function b2cBody(payment: SimulatedPayment, overrides: Record<string, unknown> = {}) {
    const { ResultCode = payment.resultCode, ResultDesc = payment.resultDesc, ...params } = overrides;
    const completed = eatDigits().slice(0, 14).replace(/^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/, '$3.$2.$1 $4:$5:$6');
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

  // -------------------------------------------------------------------------------------------
  // Decisions

  function decidePush(push: SimulatedPush, callback = true) {
    if (push.state !== 'pending') return;
    push.state = 'final';
    if (push.resultCode === 0) {
      push.receipt = receipt();
      push.transactionDate = Number(eatDigits().slice(0, 14));
    }
    if (callback) dispatch(stkDelivery(push));
  }

  function decidePayment(payment: SimulatedPayment, outcome: Outcome | 'queue_timeout', callback = true) {
    if (payment.state !== 'pending') return;
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
    if (mode.callbacks === 'lose') decide(false);
    else later(mode.callbackDelayMs, () => decide());
  };

  // -------------------------------------------------------------------------------------------
  // Provider API

  const reject = (ctx: Context, status: number, errorCode: string, errorMessage: string) => {
    ctx.status = status;
    ctx.body = { requestId: requestId(), errorCode, errorMessage };
  };
  const authorized = (ctx: Context) => {
    const token = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
    const expiresAt = token === undefined ? undefined : tokens.get(token);
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
  const hang = (ctx: Context) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, mode.hangMs);
      timers.add(timer);
      ctx.res.once('close', () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve();
      });
    });

  const api = new Router();
  api.get('/oauth/v1/generate', (ctx) => {
    if (mode.failOAuth) return reject(ctx, 503, '503.001.01', 'Service Unavailable (simulated)');
    if (ctx.query.grant_type !== 'client_credentials') return reject(ctx, 400, '400.008.02', 'Invalid grant type passed');
    if (ctx.get('authorization') !== basic) return reject(ctx, 400, '400.008.01', 'Invalid Authentication passed');
    const token = randomBytes(21).toString('base64url');
    remember(tokens, token, Date.now() + mode.tokenTtlSeconds * 1000, LIMITS.tokens);
    ctx.body = { access_token: token, expires_in: String(mode.tokenTtlSeconds) };
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
      ['PhoneNumber', PHONE.test(phone)],
      ['PartyA', String(body.PartyA) === phone],
      ['PartyB', buyGoods ? /^\d{5,8}$/.test(String(body.PartyB)) : String(body.PartyB) === shortCode],
      ['CallBackURL', isUrl(body.CallBackURL)],
      ['AccountReference', text(body.AccountReference, 12)],
      ['TransactionDesc', text(body.TransactionDesc, 13)],
    ]);
    if (!valid || amount === undefined) return;
    const failWith = mode.pushFailWith;
    const takesEffect = failWith === 0 || ((failWith === 'timeout' || failWith >= 500) && mode.failedPushesTakeEffect);
    let checkoutRequestId: string;
    do checkoutRequestId = `ws_CO_${eatDigits().slice(0, 14)}${digits(6)}`;
    while (pushes.has(checkoutRequestId));
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
      remember(pushes, checkoutRequestId, push, LIMITS.records);
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
    const push = pushes.get(String(body.CheckoutRequestID));
    if (!validate(ctx, [...passwordChecks(body), ['CheckoutRequestID', push !== undefined]]) || !push) return;
    push.queries += 1;
    const answered = processingAnswered.get(push.checkoutRequestId) ?? 0;
    const forced = answered < mode.processingQueries;
    if (forced) remember(processingAnswered, push.checkoutRequestId, answered + 1, LIMITS.records);
    if (forced || push.state === 'pending' || Date.now() < Date.parse(push.receivedAt) + mode.processingForMs) {
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
      ['PartyB', PHONE.test(phone)],
      ['Remarks', text(body.Remarks, 100)],
      ['QueueTimeOutURL', isUrl(body.QueueTimeOutURL)],
      ['ResultURL', isUrl(body.ResultURL)],
      ['Occasion', body.Occasion === undefined || (typeof body.Occasion === 'string' && body.Occasion.length <= 100)],
    ]);
    if (!valid || amount === undefined) return;
    if (mode.payoutFailWith !== 0) return reject(ctx, mode.payoutFailWith, `${mode.payoutFailWith}.001.01`, 'Simulated failure');
    const originatorConversationId = String(body.OriginatorConversationID);
    if (originatorIds.has(originatorConversationId)) return reject(ctx, 400, BAD_REQUEST, 'Bad Request - Duplicate OriginatorConversationID');
    remember(originatorIds, originatorConversationId, true, LIMITS.ids);
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
      transactionId: receipt(),
      callbacksSent: 0,
    };
    remember(payments, originatorConversationId, payment, LIMITS.records);
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

  // -------------------------------------------------------------------------------------------
  // Control API

  const control: RunningMobileMoneySimulator['control'] = {
    reset() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const store of [pushes, payments, originatorIds, receipts, processingAnswered]) store.clear();
      sent.length = 0;
      held = [];
      mode = defaults();
    },
    setMode(patch) {
      const leavingReorder = mode.callbacks === 'reorder' && patch.callbacks !== undefined && patch.callbacks !== 'reorder';
      mode = { ...mode, ...patch };
      // Each push gets a fresh budget of "being processed" answers.
      if (patch.processingQueries !== undefined) processingAnswered.clear();
      if (leavingReorder) void flush();
      return { ...mode };
    },
    pushes: () => [...pushes.values()],
    payments: () => [...payments.values()],
    callbacks: () => [...sent],
    flush,
    revokeTokens: () => tokens.clear(),
  };

  const controlApi = new Router({ prefix: '/_control' });
  controlApi.post('/reset', (ctx) => {
    control.reset();
    ctx.status = 204;
  });
  controlApi.get('/mode', (ctx) => {
    ctx.body = mode;
  });
  controlApi.patch('/mode', (ctx) => {
    const patch = modeSchema.partial().safeParse(ctx.request.body);
    if (!patch.success) return reject(ctx, 400, BAD_REQUEST, z.prettifyError(patch.error));
    ctx.body = control.setMode(patch.data);
  });
  controlApi.get('/pushes', (ctx) => {
    ctx.body = control.pushes();
  });
  controlApi.get('/b2c', (ctx) => {
    ctx.body = control.payments();
  });
  controlApi.get('/callbacks', (ctx) => {
    ctx.body = control.callbacks();
  });
  controlApi.post('/callbacks/flush', async (ctx) => {
    await control.flush();
    ctx.status = 204;
  });
  /**
   * Sends a result callback now, once, whatever the mode; a pending request is decided first
   * (and gets no other callback). The body's keys override the callback: ResultCode and
   * ResultDesc, or a metadata item / result parameter by name (null removes it), e.g.
   * `{"Amount": 1}` for a wrong-amount callback. Accepts a CheckoutRequestID or an
   * OriginatorConversationID.
   */
  controlApi.post('/callbacks/:id/send', async (ctx) => {
    const overrides = (ctx.request.body ?? {}) as Record<string, unknown>;
    const push = pushes.get(ctx.params.id!);
    const payment = payments.get(ctx.params.id!);
    if (push) {
      decidePush(push, false);
      ctx.body = await post(stkDelivery(push, overrides));
    } else if (payment) {
      decidePayment(payment, B2C_BY_LAST_DIGIT[payment.phone.slice(-1)] ?? PAID, false);
      ctx.body = await post(b2cDelivery(payment, overrides));
    } else {
      reject(ctx, 404, '404.001.01', 'No such CheckoutRequestID or OriginatorConversationID');
    }
  });
  controlApi.post('/tokens/revoke', (ctx) => {
    control.revokeTokens();
    ctx.status = 204;
  });

  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) reject(ctx, 404, '404.001.01', 'Resource not found');
    } catch (error) {
      const status = (error as { status?: number }).status ?? 500;
      if (status === 400) reject(ctx, 400, BAD_REQUEST, 'Bad Request - Invalid JSON');
      else reject(ctx, status, '500.003.1001', 'Internal Server Error');
    }
  });
  app.use(bodyParser({ enableTypes: ['json'] }));
  app.use(controlApi.routes());
  app.use(api.routes());
  const server: Server = app.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    control,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

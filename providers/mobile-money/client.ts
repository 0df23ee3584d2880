import { z } from 'zod';
import { fetchWithDeadline, request } from '../http';

/**
 * Client of the mobile-money provider (protocols/mobile-money.md, Daraja-like): OAuth, push
 * prompt (STK push) with its status query, send money (B2C), and parsers for the callbacks.
 * Callers speak whole shillings and `+254...` numbers; the provider's forms (`2547...`,
 * PascalCase bodies, `YYYYMMDDHHmmss`) exist only inside this module. Nothing here logs, and no
 * error message carries a credential, a token or a phone number.
 */
export interface MobileMoneyClientOptions {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  /** Paybill number, or the store number of a Buy Goods till. */
  shortCode: string;
  passkey: string;
  /** B2C initiator and its encrypted password (the provider's SecurityCredential). */
  initiatorName: string;
  securityCredential: string;
  /** The B2C paying shortcode when it differs from `shortCode`. */
  b2cShortCode?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
  clock?: () => Date;
}

export interface StkPushRequest {
  /** Whole shillings (see toWholeShillings). */
  amount: number;
  /** `+2547XXXXXXXX` or `+2541XXXXXXXX`. */
  phone: string;
  /** Should carry an unguessable token: callbacks are not signed. */
  callbackUrl: string;
  /** Truncated to 12 characters (the provider does not echo it back). */
  accountReference: string;
  /** Truncated to 13 characters. */
  description: string;
  transactionType: 'CustomerPayBillOnline' | 'CustomerBuyGoodsOnline';
  /** Required for Buy Goods (the store is `shortCode`, the till is PartyB); not for paybill. */
  till?: string;
}

export interface StkPushAccepted {
  merchantRequestId: string;
  checkoutRequestId: string;
  /** '0' means accepted for processing, not paid. */
  responseCode: string;
  customerMessage: string;
}

/** `unknown`: the provider refused the query itself (a CheckoutRequestID it does not know). */
export type StkQueryResult = { state: 'pending' } | { state: 'unknown' } | { state: 'final'; resultCode: string; resultDesc: string };

export interface B2cRequest {
  /** Use our transaction id: the provider refuses a repeat, which makes a retry safe. */
  originatorConversationId: string;
  amount: number;
  phone: string;
  resultUrl: string;
  queueTimeoutUrl: string;
  /** Truncated to 100 characters. */
  remarks: string;
  occasion?: string;
  commandId?: 'BusinessPayment' | 'SalaryPayment' | 'PromotionPayment';
}

export interface B2cAccepted {
  conversationId: string;
  originatorConversationId: string;
  responseCode: string;
}

export interface StkCallback {
  merchantRequestId: string;
  checkoutRequestId: string;
  /** '0' is paid; '1032', '1037', '1019', '1', '2001' are ordinary refusals; may be non-numeric. */
  resultCode: string;
  resultDesc: string;
  metadata?: {
    /** As sent (a number, sometimes text): checked by domain/mobile-money/callbacks.ts. */
    amount?: string | number;
    receipt?: string;
    /** `YYYYMMDDHHmmss`, Nairobi time (fromProviderTimestamp). */
    transactionDate?: string;
    /** As the provider sent it (`2547...`, sometimes masked): checked by domain/mobile-money/callbacks.ts. */
    phone?: string;
  };
}

export interface B2cResult {
  resultType: number;
  resultCode: string;
  resultDesc: string;
  originatorConversationId: string;
  conversationId: string;
  transactionId?: string;
  /** ResultParameters by Key: TransactionReceipt, TransactionAmount, ReceiverPartyPublicName... */
  parameters: Record<string, string | number>;
  referenceData: Record<string, string | number>;
}

export interface MobileMoneyClient {
  /** The cached access token, fetched or refreshed as needed. For diagnostics: never log it. */
  accessToken(): Promise<string>;
  stkPush(request: StkPushRequest): Promise<StkPushAccepted>;
  stkQuery(checkoutRequestId: string): Promise<StkQueryResult>;
  b2c(request: B2cRequest): Promise<B2cAccepted>;
}

export type MobileMoneyOperation = 'oauth' | 'stkPush' | 'stkQuery' | 'b2c';

export const ERROR_CODES = { badRequest: '400.002.02', invalidToken: '404.001.03', processing: '500.001.1001' } as const;

/**
 * A failed provider call. `indeterminate` is the one thing a workflow must look at before a
 * push: true when the provider may have acted on the request (timeout, connection lost after
 * sending, 5xx, an unreadable success answer), so it must not be sent again, only followed up
 * by callback or status query; false when it certainly was not acted on (a 4xx, usually with the
 * error envelope; connection refused; an `oauth` failure, which happens before the request).
 */
export class MobileMoneyError extends Error {
  readonly operation: MobileMoneyOperation;
  readonly httpStatus?: number;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly requestId?: string;
  readonly indeterminate: boolean;

  constructor(
    message: string,
    details: { operation: MobileMoneyOperation; indeterminate: boolean; httpStatus?: number; errorCode?: string; errorMessage?: string; requestId?: string },
  ) {
    super(message);
    this.name = 'MobileMoneyError';
    this.operation = details.operation;
    this.indeterminate = details.indeterminate;
    this.httpStatus = details.httpStatus;
    this.errorCode = details.errorCode;
    this.errorMessage = details.errorMessage;
    this.requestId = details.requestId;
  }

  /** B2C refused because the OriginatorConversationID was used before (*assumed* wording). */
  get duplicateRequest(): boolean {
    return this.operation === 'b2c' && this.errorCode === ERROR_CODES.badRequest && /duplicate/i.test(this.errorMessage ?? '');
  }
}

/** A callback body that does not have the protocol's shape: answer it 400 and keep waiting. */
export class MalformedCallbackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedCallbackError';
  }
}

// ---------------------------------------------------------------------------------------------
// Conversions at the edge

const KENYAN_MOBILE = /^\+254[17]\d{8}$/;

/** `+254712345678` → `254712345678`; anything else (other countries, 07..., spaces) is refused. */
export function toProviderPhone(phone: string): string {
  if (!KENYAN_MOBILE.test(phone)) throw new RangeError('phone must be a Kenyan mobile number, +2547XXXXXXXX or +2541XXXXXXXX');
  return phone.slice(1);
}

/** Money.value (integer cents) → whole shillings; the provider cannot move cents, so none may be lost. */
export function toWholeShillings(minorUnits: number): number {
  if (!Number.isSafeInteger(minorUnits) || minorUnits <= 0 || minorUnits % 100 !== 0) {
    throw new RangeError(`amount ${minorUnits} (minor units) is not a positive whole number of shillings`);
  }
  return minorUnits / 100;
}

/** Daraja reads Timestamp as East Africa Time (UTC+3 all year, no daylight saving). */
const EAT_OFFSET_MS = 3 * 60 * 60 * 1000;

/** `YYYYMMDDHHmmss` in Nairobi time. */
export function providerTimestamp(at: Date): string {
  return new Date(at.getTime() + EAT_OFFSET_MS).toISOString().replace(/\D/g, '').slice(0, 14);
}

/** The inverse of providerTimestamp (e.g. a callback's TransactionDate). */
export function fromProviderTimestamp(timestamp: string | number): Date {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(String(timestamp));
  if (!m) throw new RangeError('provider timestamp must be YYYYMMDDHHmmss');
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s) - EAT_OFFSET_MS);
}

export function stkPassword(shortCode: string, passkey: string, timestamp: string): string {
  return Buffer.from(`${shortCode}${passkey}${timestamp}`).toString('base64');
}

const wholeShillings = (amount: number) => {
  if (!Number.isSafeInteger(amount) || amount < 1) throw new RangeError('amount must be a positive whole number of shillings');
  return amount;
};
const bounded = (value: string, max: number, field: string) => {
  const text = value.trim();
  if (!text) throw new RangeError(`${field} must not be empty`);
  return text.slice(0, max);
};

// ---------------------------------------------------------------------------------------------
// Answers and callbacks

const providerValue = z.union([z.number(), z.string()]);
const errorEnvelope = z.object({ requestId: z.string().optional(), errorCode: z.string(), errorMessage: z.string().optional() });
const tokenAnswer = z.object({ access_token: z.string().min(1), expires_in: providerValue });
const pushAnswer = z.object({
  MerchantRequestID: z.string(),
  CheckoutRequestID: z.string().min(1),
  ResponseCode: providerValue,
  CustomerMessage: z.string().optional(),
  ResponseDescription: z.string().optional(),
});
const queryAnswer = z.object({ ResultCode: providerValue, ResultDesc: z.string().optional() });
const b2cAnswer = z.object({ ConversationID: z.string().min(1), OriginatorConversationID: z.string(), ResponseCode: providerValue });

const stkCallbackBody = z.object({
  Body: z.object({
    stkCallback: z.object({
      MerchantRequestID: z.string().min(1),
      CheckoutRequestID: z.string().min(1),
      ResultCode: z.union([z.number().int(), z.string().min(1)]),
      ResultDesc: z.string(),
      CallbackMetadata: z.object({ Item: z.array(z.object({ Name: z.string(), Value: providerValue.nullish() })) }).optional(),
    }),
  }),
});
const keyValues = z
  .union([z.array(z.object({ Key: z.string(), Value: providerValue.nullish() })), z.object({ Key: z.string(), Value: providerValue.nullish() })])
  .transform((v) => (Array.isArray(v) ? v : [v]));
const b2cResultBody = z.object({
  Result: z.object({
    ResultType: z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)]),
    ResultCode: z.union([z.number().int(), z.string().min(1)]),
    ResultDesc: z.string(),
    OriginatorConversationID: z.string().min(1),
    ConversationID: z.string().min(1),
    TransactionID: z.string().optional(),
    ResultParameters: z.object({ ResultParameter: keyValues }).optional(),
    ReferenceData: z.object({ ReferenceItem: keyValues }).optional(),
  }),
});

function parseCallback<S extends z.ZodType>(schema: S, body: unknown, what: string): z.output<S> {
  let input = body;
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    try {
      input = JSON.parse(body.toString());
    } catch {
      throw new MalformedCallbackError(`${what}: not JSON`);
    }
  }
  const parsed = schema.safeParse(input);
  // prettifyError names paths and expectations, never values: safe to log.
  if (!parsed.success) throw new MalformedCallbackError(`${what}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Reads a push callback (`{Body: {stkCallback}}`), as JSON text or parsed. */
export function parseStkCallback(body: unknown): StkCallback {
  const cb = parseCallback(stkCallbackBody, body, 'push callback').Body.stkCallback;
  const result: StkCallback = {
    merchantRequestId: cb.MerchantRequestID,
    checkoutRequestId: cb.CheckoutRequestID,
    resultCode: String(cb.ResultCode),
    resultDesc: cb.ResultDesc,
  };
  if (!cb.CallbackMetadata) return result;
  // Items are read by Name: their order is not promised, and Balance often comes without Value.
  const item = (name: string) => cb.CallbackMetadata?.Item.find((i) => i.Name === name)?.Value ?? undefined;
  const amount = item('Amount');
  const receipt = item('MpesaReceiptNumber');
  const date = item('TransactionDate');
  const phone = item('PhoneNumber');
  if (date !== undefined && !/^\d{14}$/.test(String(date))) throw new MalformedCallbackError('push callback: TransactionDate is not YYYYMMDDHHmmss');
  result.metadata = {
    ...(amount !== undefined && { amount }),
    ...(receipt !== undefined && { receipt: String(receipt) }),
    ...(date !== undefined && { transactionDate: String(date) }),
    ...(phone !== undefined && { phone: String(phone) }),
  };
  return result;
}

/** Reads a B2C result or queue timeout (`{Result}`), as JSON text or parsed. */
export function parseB2cResult(body: unknown): B2cResult {
  const r = parseCallback(b2cResultBody, body, 'B2C result').Result;
  const byKey = (items: { Key: string; Value?: string | number | null }[] = []) =>
    Object.fromEntries(items.filter((i) => i.Value !== undefined && i.Value !== null).map((i) => [i.Key, i.Value as string | number]));
  return {
    resultType: r.ResultType,
    resultCode: String(r.ResultCode),
    resultDesc: r.ResultDesc,
    originatorConversationId: r.OriginatorConversationID,
    conversationId: r.ConversationID,
    ...(r.TransactionID !== undefined && { transactionId: r.TransactionID }),
    parameters: byKey(r.ResultParameters?.ResultParameter),
    referenceData: byKey(r.ReferenceData?.ReferenceItem),
  };
}

// ---------------------------------------------------------------------------------------------
// The client

/** Failures that prove the request never reached the provider. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

interface Answer {
  status: number;
  body: unknown;
}

export function createMobileMoneyClient(options: MobileMoneyClientOptions): MobileMoneyClient {
  const { baseUrl, shortCode, passkey } = options;
  const b2cShortCode = options.b2cShortCode ?? shortCode;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const clock = options.clock ?? (() => new Date());
  /** An injected fetch replaces the node:http path (tests of transport failures use one). */
  const send = options.fetch;
  const basic = `Basic ${Buffer.from(`${options.consumerKey}:${options.consumerSecret}`).toString('base64')}`;
  let token: { value: string; refreshAt: number } | undefined;
  let tokenRequest: Promise<string> | undefined;

  async function call(operation: MobileMoneyOperation, path: string, init: RequestInit): Promise<Answer> {
    try {
      const response = send
        ? await fetchWithDeadline(`${baseUrl}${path}`, init, timeoutMs, send)
        : await request(`${baseUrl}${path}`, { method: init.method, headers: init.headers as Record<string, string> | undefined, body: init.body as string | undefined }, timeoutMs);
      const text = await response.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      return { status: response.status, body };
    } catch (error) {
      // fetch wraps the socket's error in `cause`; node:http rejects with it directly.
      const err = error as Error & { code?: string; cause?: { code?: string } };
      const code = err.cause?.code ?? err.code ?? '';
      const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError';
      const notSent = operation === 'oauth' || (!timedOut && NOT_SENT.has(code));
      throw new MobileMoneyError(`${operation}: ${timedOut ? `no answer within ${timeoutMs} ms` : `provider unreachable (${code || err.message})`}`, {
        operation,
        indeterminate: !notSent,
      });
    }
  }

  function failure(operation: MobileMoneyOperation, answer: Answer): MobileMoneyError {
    const envelope = errorEnvelope.safeParse(answer.body);
    const fields: Partial<z.output<typeof errorEnvelope>> = envelope.success ? envelope.data : {};
    const definite = operation === 'oauth' || (answer.status >= 400 && answer.status < 500);
    return new MobileMoneyError(`${operation}: provider answered ${answer.status}${fields.errorCode ? ` ${fields.errorCode} ${fields.errorMessage ?? ''}` : ''}`.trim(), {
      operation,
      indeterminate: !definite,
      httpStatus: answer.status,
      ...fields,
    });
  }

  const unreadable = (operation: MobileMoneyOperation, answer: Answer) =>
    new MobileMoneyError(`${operation}: unreadable ${answer.status} answer`, { operation, indeterminate: operation !== 'oauth', httpStatus: answer.status });

  async function fetchToken(): Promise<string> {
    const requestedAt = Date.now();
    const answer = await call('oauth', '/oauth/v1/generate?grant_type=client_credentials', { headers: { authorization: basic } });
    if (answer.status !== 200) throw failure('oauth', answer);
    const parsed = tokenAnswer.safeParse(answer.body);
    if (!parsed.success) throw unreadable('oauth', answer);
    const lifetimeMs = Number(parsed.data.expires_in) * 1000;
    const usableMs = Number.isFinite(lifetimeMs) && lifetimeMs > 0 ? lifetimeMs : 300_000;
    // Refresh a minute early (a tenth early for short tokens), timed from the request.
    token = { value: parsed.data.access_token, refreshAt: requestedAt + usableMs - Math.min(60_000, usableMs / 10) };
    return token.value;
  }

  async function accessToken(): Promise<string> {
    if (token && Date.now() < token.refreshAt) return token.value;
    // Concurrent callers share one OAuth request.
    tokenRequest ??= fetchToken().finally(() => {
      tokenRequest = undefined;
    });
    return tokenRequest;
  }

  /** POST with the bearer token; an invalid-token answer was not acted on, so one retry is safe. */
  async function post(operation: MobileMoneyOperation, path: string, payload: unknown): Promise<Answer> {
    for (let attempt = 1; ; attempt++) {
      const bearer = await accessToken();
      const answer = await call(operation, path, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
      const envelope = errorEnvelope.safeParse(answer.body);
      if (attempt === 1 && envelope.success && envelope.data.errorCode === ERROR_CODES.invalidToken) {
        if (token?.value === bearer) token = undefined;
        continue;
      }
      return answer;
    }
  }

  const ok = (answer: Answer) => answer.status >= 200 && answer.status < 300;

  function credentials() {
    const timestamp = providerTimestamp(clock());
    return { BusinessShortCode: shortCode, Password: stkPassword(shortCode, passkey, timestamp), Timestamp: timestamp };
  }

  return {
    accessToken,

    async stkPush(request) {
      const amount = wholeShillings(request.amount);
      const phone = toProviderPhone(request.phone);
      const buyGoods = request.transactionType === 'CustomerBuyGoodsOnline';
      if (buyGoods !== (request.till !== undefined)) throw new RangeError('till is required for CustomerBuyGoodsOnline and only for it');
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
      const answer = await post('stkQuery', '/mpesa/stkpushquery/v1/query', { ...credentials(), CheckoutRequestID: checkoutRequestId });
      const envelope = errorEnvelope.safeParse(answer.body);
      // "Being processed" is the pending state, not a failure; the code alone also covers merchant errors.
      if (answer.status === 500 && envelope.success && envelope.data.errorCode === ERROR_CODES.processing && /being processed/i.test(envelope.data.errorMessage ?? '')) {
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

    async b2c(request) {
      if (!request.originatorConversationId) throw new RangeError('originatorConversationId must not be empty');
      const answer = await post('b2c', '/mpesa/b2c/v3/paymentrequest', {
        OriginatorConversationID: request.originatorConversationId,
        InitiatorName: options.initiatorName,
        SecurityCredential: options.securityCredential,
        CommandID: request.commandId ?? 'BusinessPayment',
        Amount: wholeShillings(request.amount),
        PartyA: b2cShortCode,
        PartyB: toProviderPhone(request.phone),
        Remarks: bounded(request.remarks, 100, 'remarks'),
        QueueTimeOutURL: request.queueTimeoutUrl,
        ResultURL: request.resultUrl,
        ...(request.occasion && { Occasion: request.occasion.slice(0, 100) }),
      });
      if (!ok(answer)) throw failure('b2c', answer);
      const parsed = b2cAnswer.safeParse(answer.body);
      if (!parsed.success) throw unreadable('b2c', answer);
      return {
        conversationId: parsed.data.ConversationID,
        originatorConversationId: parsed.data.OriginatorConversationID,
        responseCode: String(parsed.data.ResponseCode),
      };
    },
  };
}

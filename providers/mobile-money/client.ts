import { z } from 'zod';
import { fetchWithDeadline, request } from '../http';
import {
  ERROR_CODES,
  type MobileMoneyClient,
  type MobileMoneyClientOptions,
  MobileMoneyError,
  type MobileMoneyOperation,
  providerTimestamp,
  stkPassword,
  toProviderPhone,
} from './protocol';
import { securityCredentials } from './security-credential';

/**
 * Client of the mobile-money provider: OAuth with a cached token, push prompt (STK push) with
 * its status query, send money (B2C) and the Transaction Status query that asks about a payout
 * whose result did not come, over keep-alive HTTP. Its types and edge conversions
 * are ./protocol.ts; its callbacks are read by ./callbacks.ts.
 */
const wholeShillings = (amount: number) => {
  if (!Number.isSafeInteger(amount) || amount < 1)
    throw new RangeError('amount must be a positive whole number of shillings');
  return amount;
};
const bounded = (value: string, max: number, field: string) => {
  const text = value.trim();
  if (!text) throw new RangeError(`${field} must not be empty`);
  return text.slice(0, max);
};

// Answers

const providerValue = z.union([z.number(), z.string()]);
const errorEnvelope = z.object({
  requestId: z.string().optional(),
  errorCode: z.string(),
  errorMessage: z.string().optional(),
});
const tokenAnswer = z.object({ access_token: z.string().min(1), expires_in: providerValue });
const pushAnswer = z.object({
  MerchantRequestID: z.string(),
  CheckoutRequestID: z.string().min(1),
  ResponseCode: providerValue,
  CustomerMessage: z.string().optional(),
  ResponseDescription: z.string().optional(),
});
const queryAnswer = z.object({ ResultCode: providerValue, ResultDesc: z.string().optional() });
/** B2C and Transaction Status are answered alike: accepted, with the request's ids. */
const acceptedAnswer = z.object({
  ConversationID: z.string().min(1),
  OriginatorConversationID: z.string(),
  ResponseCode: providerValue,
});

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
  // Reads the certificate now: a wrong one would only show as Result 2001 on every payout.
  const securityCredential = securityCredentials(options.certificate, options.initiatorPassword);
  const basic = `Basic ${Buffer.from(`${options.consumerKey}:${options.consumerSecret}`).toString('base64')}`;
  let token: { value: string; refreshAt: number } | undefined;
  let tokenRequest: Promise<string> | undefined;

  async function call(operation: MobileMoneyOperation, path: string, init: RequestInit): Promise<Answer> {
    try {
      const response = send
        ? await fetchWithDeadline(`${baseUrl}${path}`, init, timeoutMs, send)
        : await request(
            `${baseUrl}${path}`,
            {
              method: init.method,
              headers: init.headers as Record<string, string> | undefined,
              body: init.body as string | undefined,
            },
            timeoutMs,
          );
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
      throw new MobileMoneyError(
        `${operation}: ${timedOut ? `no answer within ${timeoutMs} ms` : `provider unreachable (${code || err.message})`}`,
        {
          operation,
          indeterminate: !notSent,
        },
      );
    }
  }

  function failure(operation: MobileMoneyOperation, answer: Answer): MobileMoneyError {
    const envelope = errorEnvelope.safeParse(answer.body);
    const fields: Partial<z.output<typeof errorEnvelope>> = envelope.success ? envelope.data : {};
    const definite = operation === 'oauth' || (answer.status >= 400 && answer.status < 500);
    return new MobileMoneyError(
      `${operation}: provider answered ${answer.status}${fields.errorCode ? ` ${fields.errorCode} ${fields.errorMessage ?? ''}` : ''}`.trim(),
      {
        operation,
        indeterminate: !definite,
        httpStatus: answer.status,
        ...fields,
      },
    );
  }

  const unreadable = (operation: MobileMoneyOperation, answer: Answer) =>
    new MobileMoneyError(`${operation}: unreadable ${answer.status} answer`, {
      operation,
      indeterminate: operation !== 'oauth',
      httpStatus: answer.status,
    });

  async function fetchToken(): Promise<string> {
    const requestedAt = Date.now();
    const answer = await call('oauth', '/oauth/v1/generate?grant_type=client_credentials', {
      headers: { authorization: basic },
    });
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

  /** The initiator's part of B2C and Transaction Status bodies (a new SecurityCredential each time). */
  const initiator = () => ({ SecurityCredential: securityCredential(), PartyA: b2cShortCode });

  /** Reads an accepted B2C or Transaction Status answer; anything else is a MobileMoneyError. */
  function accepted(operation: MobileMoneyOperation, answer: Answer) {
    if (!ok(answer)) throw failure(operation, answer);
    const parsed = acceptedAnswer.safeParse(answer.body);
    if (!parsed.success) throw unreadable(operation, answer);
    return {
      conversationId: parsed.data.ConversationID,
      originatorConversationId: parsed.data.OriginatorConversationID,
      responseCode: String(parsed.data.ResponseCode),
    };
  }

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

    async b2c(request) {
      if (!request.originatorConversationId) throw new RangeError('originatorConversationId must not be empty');
      // v3, not the legacy v1: only v3 takes our OriginatorConversationID, which makes a retry safe.
      const answer = await post('b2c', '/mpesa/b2c/v3/paymentrequest', {
        OriginatorConversationID: request.originatorConversationId,
        InitiatorName: options.initiatorName,
        ...initiator(),
        CommandID: request.commandId ?? 'BusinessPayment',
        Amount: wholeShillings(request.amount),
        PartyB: toProviderPhone(request.phone),
        Remarks: bounded(request.remarks, 100, 'remarks'),
        QueueTimeOutURL: request.queueTimeoutUrl,
        ResultURL: request.resultUrl,
        ...(request.occasion && { Occasion: request.occasion.slice(0, 100) }),
      });
      return accepted('b2c', answer);
    },

    async transactionStatus(request) {
      if (!request.originalConversationId && !request.receipt)
        throw new RangeError('a status query needs the originalConversationId or the receipt');
      // Asking twice is harmless: on any failure the caller simply asks again later.
      const answer = await post('transactionStatus', '/mpesa/transactionstatus/v1/query', {
        Initiator: options.initiatorName,
        ...initiator(),
        CommandID: 'TransactionStatusQuery',
        ...(request.receipt && { TransactionID: request.receipt }),
        ...(request.originalConversationId && { OriginalConversationID: request.originalConversationId }),
        IdentifierType: '4',
        ResultURL: request.resultUrl,
        QueueTimeOutURL: request.queueTimeoutUrl,
        Remarks: bounded(request.remarks, 100, 'remarks'),
        ...(request.occasion && { Occasion: request.occasion.slice(0, 100) }),
      });
      return accepted('transactionStatus', answer);
    },
  };
}

import { z } from 'zod';
import { fetchWithDeadline, request } from '../http';
import { ERROR_CODES, type MobileMoneyClientOptions, MobileMoneyError, type MobileMoneyOperation } from './protocol';

/**
 * The mobile-money client's HTTP, shared by its collections and payouts: the OAuth token (cached,
 * one request for concurrent callers, dropped once when the provider calls it invalid), one
 * exchange with a deadline, and the one mapping of no answer, a refusal or an unreadable answer to
 * a MobileMoneyError that says whether the provider may have acted (`indeterminate`).
 */

/** Failures that prove the request never reached the provider. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

export const providerValue = z.union([z.number(), z.string()]);
export const errorEnvelope = z.object({
  requestId: z.string().optional(),
  errorCode: z.string(),
  errorMessage: z.string().optional(),
});
const tokenAnswer = z.object({ access_token: z.string().min(1), expires_in: providerValue });

export interface Answer {
  status: number;
  body: unknown;
}

export const ok = (answer: Answer) => answer.status >= 200 && answer.status < 300;

export function failure(operation: MobileMoneyOperation, answer: Answer): MobileMoneyError {
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

export const unreadable = (operation: MobileMoneyOperation, answer: Answer) =>
  new MobileMoneyError(`${operation}: unreadable ${answer.status} answer`, {
    operation,
    indeterminate: operation !== 'oauth',
    httpStatus: answer.status,
  });

// Request fields both operation groups check before anything is sent.

export const wholeShillings = (amount: number) => {
  if (!Number.isSafeInteger(amount) || amount < 1)
    throw new RangeError('amount must be a positive whole number of shillings');
  return amount;
};
export const bounded = (value: string, max: number, field: string) => {
  const text = value.trim();
  if (!text) throw new RangeError(`${field} must not be empty`);
  return text.slice(0, max);
};

export function createMobileMoneyTransport(
  options: Pick<MobileMoneyClientOptions, 'baseUrl' | 'consumerKey' | 'consumerSecret' | 'fetch' | 'timeoutMs'>,
) {
  const { baseUrl } = options;
  const timeoutMs = options.timeoutMs ?? 20_000;
  /** An injected fetch replaces the node:http path (tests of transport failures use one). */
  const send = options.fetch;
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

  return { accessToken, post };
}

export type MobileMoneyTransport = ReturnType<typeof createMobileMoneyTransport>;

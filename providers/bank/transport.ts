import { z } from 'zod';
import { type HttpAnswer, HttpTimeoutError, httpsAgentTrusting, request } from '../http';
import { BankError, type BankClientOptions, type BankOperation } from './protocol';

/**
 * The bank client's HTTP, shared by its onboarding and mobile-number operations: one agent and
 * deadline per client, the cached OAuth token, bearer calls with the Idempotency-Key, and the one
 * mapping of no answer, a refusal, an unreadable or a REJECTED answer to a BankError (classed
 * indeterminate or transient; never with the URL or the bank's text).
 */

/** A network error that happened before anything was sent: the bank certainly did nothing. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

const tokenAnswer = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number() });
const errorEnvelope = z.object({
  code: z.string(),
  fields: z.array(z.object({ field: z.string() })).optional(),
});
export const rejection = z.object({ code: z.string(), reason: z.string().optional() }).nullable().optional();

export interface Answer {
  status: number;
  body: unknown;
}

/** A non-2xx answer as a BankError: the code and field names only, never the bank's text. */
export function failure(operation: BankOperation, write: boolean, answer: Answer): BankError {
  const envelope = errorEnvelope.safeParse(answer.body);
  const oauth = z.object({ error: z.string() }).safeParse(answer.body);
  const code = envelope.success ? envelope.data.code : oauth.success ? oauth.data.error : undefined;
  const fields = envelope.success ? envelope.data.fields?.map((f) => f.field) : undefined;
  const serverSide = answer.status >= 500;
  return new BankError(
    `bank ${operation}: HTTP ${answer.status}${code ? ` ${code}` : ''}${fields?.length ? ` (fields: ${fields.join(', ')})` : ''}`,
    {
      operation,
      httpStatus: answer.status,
      ...(code && { code }),
      ...(fields && { fields }),
      indeterminate: write && serverSide,
      transient: serverSide || answer.status === 429,
    },
  );
}

export const unreadable = (operation: BankOperation, write: boolean, answer: Answer) =>
  new BankError(`bank ${operation}: unreadable ${answer.status} answer`, {
    operation,
    httpStatus: answer.status,
    indeterminate: write,
    transient: true,
  });

export const rejected = (operation: BankOperation, code: string | undefined) =>
  new BankError(`bank ${operation}: rejected${code ? ` ${code}` : ''}`, {
    operation,
    ...(code && { code }),
    indeterminate: false,
    transient: false,
  });

export const ok = (answer: Answer) => answer.status >= 200 && answer.status < 300;
export const nonEmpty = (value: string, field: string) => {
  if (!value) throw new RangeError(`${field} must not be empty`);
  return encodeURIComponent(value);
};

export function createBankTransport(options: BankClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const httpsAgent = httpsAgentTrusting(options.ca);
  const basic = `Basic ${Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64')}`;
  let token: { value: string; refreshAt: number } | undefined;
  let tokenRequest: Promise<string> | undefined;

  /** One exchange; a transport failure as a BankError (never with the URL: it may hold a reference). */
  async function call(
    operation: BankOperation,
    write: boolean,
    path: string,
    init: { method?: string; headers: Record<string, string>; body?: string },
  ): Promise<Answer> {
    let answer: HttpAnswer;
    try {
      answer = await request(`${baseUrl}${path}`, { ...init, httpsAgent }, timeoutMs);
    } catch (error) {
      const code = (error as { code?: string }).code;
      const timedOut = error instanceof HttpTimeoutError;
      const sent = timedOut || !(code && NOT_SENT.has(code));
      throw new BankError(
        `bank ${operation}: ${timedOut ? `no answer within ${timeoutMs} ms` : `unreachable (${code ?? 'network error'})`}`,
        // The token request changes nothing; a read neither.
        { operation, indeterminate: write && sent, transient: true },
      );
    }
    const text = await answer.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: answer.status, body };
  }

  async function fetchToken(): Promise<string> {
    const requestedAt = Date.now();
    const answer = await call('token', false, '/oauth2/token', {
      method: 'POST',
      headers: {
        authorization: basic,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: 'grant_type=client_credentials',
    });
    if (answer.status !== 200) throw failure('token', false, answer);
    const parsed = tokenAnswer.safeParse(answer.body);
    if (!parsed.success) throw unreadable('token', false, answer);
    const lifetimeMs = parsed.data.expires_in * 1000;
    const usableMs = Number.isFinite(lifetimeMs) && lifetimeMs > 0 ? lifetimeMs : 300_000;
    // Refresh a minute early (a tenth early for short tokens), timed from the request.
    token = { value: parsed.data.access_token, refreshAt: requestedAt + usableMs - Math.min(60_000, usableMs / 10) };
    return token.value;
  }

  function accessToken(): Promise<string> {
    if (token && Date.now() < token.refreshAt) return Promise.resolve(token.value);
    // Concurrent callers share one token request.
    tokenRequest ??= fetchToken().finally(() => {
      tokenRequest = undefined;
    });
    return tokenRequest;
  }

  /** A call with the bearer token; a 401 (refused before anything was done) gets one fresh token. */
  async function authorized(
    operation: BankOperation,
    path: string,
    init: { method: 'GET' } | { method: 'POST'; idempotencyKey: string; payload: unknown },
  ): Promise<Answer> {
    const write = init.method === 'POST';
    const body = init.method === 'POST' ? JSON.stringify(init.payload) : undefined;
    for (let attempt = 1; ; attempt++) {
      const bearer = await accessToken();
      const answer = await call(operation, write, path, {
        method: init.method,
        headers: {
          authorization: `Bearer ${bearer}`,
          accept: 'application/json',
          ...(init.method === 'POST' && {
            'content-type': 'application/json',
            'idempotency-key': init.idempotencyKey,
          }),
        },
        body,
      });
      if (answer.status === 401 && attempt === 1) {
        if (token?.value === bearer) token = undefined;
        continue;
      }
      return answer;
    }
  }

  return { authorized };
}

export type BankTransport = ReturnType<typeof createBankTransport>;

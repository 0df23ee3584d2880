import { z } from 'zod';
import { type HttpAnswer, HttpTimeoutError, httpsAgentTrusting, request } from '../http';
import {
  BANK_ID_TYPES,
  type BankClient,
  BankError,
  type BankOperation,
  type MobileNumberChange,
  type MobileNumberChangeBody,
  type Onboarding,
  type OnboardingBody,
} from './protocol';

export interface BankClientOptions {
  /** The bank's API root (our simulator's in development and tests). */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The whole exchange of one call; onboardings carry images, so it is generous. */
  timeoutMs?: number;
  /** PEM of a CA to trust besides the system's (the simulator's certificate in development). */
  ca?: string;
}

/** A network error that happened before anything was sent: the bank certainly did nothing. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

// Answers

const tokenAnswer = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number() });
const errorEnvelope = z.object({
  code: z.string(),
  fields: z.array(z.object({ field: z.string() })).optional(),
});
const rejection = z.object({ code: z.string(), reason: z.string().optional() }).nullable().optional();
const onboardingAnswer = z.object({
  partnerReference: z.string(),
  status: z.enum(['PENDING', 'ACTIVE', 'REJECTED']),
  customerId: z.string().min(1).nullable(),
  accountNumber: z.string().min(1).nullable().optional(),
  rejection,
});
const changeAnswer = z.object({
  partnerReference: z.string(),
  status: z.enum(['PENDING', 'COMPLETED', 'REJECTED']),
  rejection,
});

interface Answer {
  status: number;
  body: unknown;
}

/**
 * The bank client (see protocol.ts): a cached OAuth token (refreshed before it expires, and once
 * more when the bank calls it invalid: a 401 was not acted on), JSON calls with our reference as
 * the Idempotency-Key, and every failure as a BankError classed indeterminate or transient. It
 * never resends a submission on its own: after an indeterminate one the caller reads the status.
 */
export function createBankClient(options: BankClientOptions): BankClient {
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

  /** A non-2xx answer as a BankError: the code and field names only, never the bank's text. */
  function failure(operation: BankOperation, write: boolean, answer: Answer): BankError {
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

  const unreadable = (operation: BankOperation, write: boolean, answer: Answer) =>
    new BankError(`bank ${operation}: unreadable ${answer.status} answer`, {
      operation,
      httpStatus: answer.status,
      indeterminate: write,
      transient: true,
    });

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

  /** A resource answer as ours; REJECTED is the definite refusal it is. */
  function onboardingOf(operation: BankOperation, write: boolean, answer: Answer, reference: string): Onboarding {
    const parsed = onboardingAnswer.safeParse(answer.body);
    if (!parsed.success || parsed.data.partnerReference !== reference) throw unreadable(operation, write, answer);
    const { status, customerId, accountNumber } = parsed.data;
    if (status === 'REJECTED') throw rejected(operation, parsed.data.rejection?.code);
    if (!customerId || (status === 'ACTIVE' && !accountNumber)) throw unreadable(operation, write, answer);
    return { status, bankCustomerId: customerId, ...(status === 'ACTIVE' && { accountNumber: accountNumber! }) };
  }

  function changeOf(operation: BankOperation, write: boolean, answer: Answer, reference: string): MobileNumberChange {
    const parsed = changeAnswer.safeParse(answer.body);
    if (!parsed.success || parsed.data.partnerReference !== reference) throw unreadable(operation, write, answer);
    if (parsed.data.status === 'REJECTED') throw rejected(operation, parsed.data.rejection?.code);
    return { status: parsed.data.status };
  }

  const rejected = (operation: BankOperation, code: string | undefined) =>
    new BankError(`bank ${operation}: rejected${code ? ` ${code}` : ''}`, {
      operation,
      ...(code && { code }),
      indeterminate: false,
      transient: false,
    });

  const ok = (answer: Answer) => answer.status >= 200 && answer.status < 300;
  const nonEmpty = (value: string, field: string) => {
    if (!value) throw new RangeError(`${field} must not be empty`);
    return encodeURIComponent(value);
  };

  return {
    async onboard({ reference, customer, documents }) {
      nonEmpty(reference, 'reference');
      const idType = Object.hasOwn(BANK_ID_TYPES, customer.idType) ? BANK_ID_TYPES[customer.idType] : undefined;
      if (!idType) throw new RangeError('idType must be IDENTITY_CARD, ALIEN_CARD or PASSPORT for a bank account');
      const payload: OnboardingBody = {
        partnerReference: reference,
        customer: {
          firstName: customer.firstName,
          ...(customer.middleName && { middleName: customer.middleName }),
          lastName: customer.lastName,
          dateOfBirth: customer.dateOfBirth,
          idType,
          idNumber: customer.idNumber,
          mobileNumber: customer.mobileNumber,
          ...(customer.email && { email: customer.email }),
        },
        documents: {
          frontSidePhoto: documents.idFront,
          ...(documents.idBack && { backSidePhoto: documents.idBack }),
          selfiePhoto: documents.selfie,
        },
      };
      const answer = await authorized('onboard', '/v1/onboardings', {
        method: 'POST',
        idempotencyKey: reference,
        payload,
      });
      if (!ok(answer)) throw failure('onboard', true, answer);
      return onboardingOf('onboard', true, answer, reference);
    },

    async onboardingStatus(reference) {
      const answer = await authorized(
        'onboardingStatus',
        `/v1/onboardings/by-reference/${nonEmpty(reference, 'reference')}`,
        { method: 'GET' },
      );
      if (!ok(answer)) throw failure('onboardingStatus', false, answer);
      return onboardingOf('onboardingStatus', false, answer, reference);
    },

    async changeMobileNumber({ reference, bankCustomerId, newMobileNumber }) {
      nonEmpty(reference, 'reference');
      const payload: MobileNumberChangeBody = { partnerReference: reference, newMobileNumber };
      const answer = await authorized(
        'changeMobileNumber',
        `/v1/customers/${nonEmpty(bankCustomerId, 'bankCustomerId')}/mobile-number-changes`,
        { method: 'POST', idempotencyKey: reference, payload },
      );
      if (!ok(answer)) throw failure('changeMobileNumber', true, answer);
      return changeOf('changeMobileNumber', true, answer, reference);
    },

    async mobileNumberChangeStatus({ reference, bankCustomerId }) {
      const answer = await authorized(
        'mobileNumberChangeStatus',
        `/v1/customers/${nonEmpty(bankCustomerId, 'bankCustomerId')}/mobile-number-changes/by-reference/${nonEmpty(reference, 'reference')}`,
        { method: 'GET' },
      );
      if (!ok(answer)) throw failure('mobileNumberChangeStatus', false, answer);
      return changeOf('mobileNumberChangeStatus', false, answer, reference);
    },
  };
}

import { sleep } from './random';

/**
 * The service's flows driven end to end through the public HTTP API, as a client app drives them
 * (README: Mobile money, KYC verification, Loans, Current account): each starts its operation,
 * follows it to its final state by polling the API, and says how it ended. A request that moves
 * money or takes an offer carries an Idempotency-Key and is retried with the same key after a
 * 5xx, a 429, a 409 "in progress", a dropped connection or no answer in time, as a careful
 * client does; the service guarantees one execution. Nothing here prints a code or a token.
 */

export interface Reply {
  status: number;
  // The API's JSON answers, read field by field.
  body: Record<string, unknown>;
  text: string;
}

/** How one operation ended, from the client's side. */
export interface Ended {
  /** `refused`: the API turned the request away; `lost`: accepted, but not final by the deadline. */
  state: 'final' | 'refused' | 'lost';
  /** The final status (and reason), the refusal, or the last status seen. */
  outcome: string;
}

export interface Caller {
  token: string;
}

/** No answer within this long: the request is sent again (keyed requests only). */
const REQUEST_TIMEOUT_MS = 60_000;
const RETRY_MS = 1_000;

export class ApiClient {
  constructor(
    readonly apiUrl: string,
    /** Epoch ms after which nothing is retried or polled any more. */
    readonly deadline: number,
  ) {}

  /** One request; a dropped connection or a timeout answers status 0. */
  async call(
    method: 'GET' | 'POST',
    path: string,
    caller: Caller,
    options: { json?: unknown; idempotencyKey?: string } = {},
  ): Promise<Reply> {
    try {
      const response = await fetch(`${this.apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${caller.token}`,
          ...(options.json !== undefined && { 'content-type': 'application/json' }),
          ...(options.idempotencyKey && { 'idempotency-key': options.idempotencyKey }),
        },
        body: options.json === undefined ? undefined : JSON.stringify(options.json),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      let body: Record<string, unknown> = {};
      try {
        body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        // Not JSON: the status says enough.
      }
      return { status: response.status, body, text };
    } catch (error) {
      return { status: 0, body: {}, text: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Keyed requests sent again, by path and by why ("no answer" is a dropped connection or a timeout). */
  readonly retries = new Map<string, number>();

  /** A keyed POST, sent again with the same key until it gets an answer that is not worth retrying. */
  async keyed(path: string, caller: Caller, json: unknown, idempotencyKey: string): Promise<Reply> {
    for (;;) {
      const reply = await this.call('POST', path, caller, { json, idempotencyKey });
      const again =
        reply.status === 0 ||
        reply.status === 429 ||
        reply.status >= 500 ||
        (reply.status === 409 && reply.text.includes('IN_PROGRESS'));
      if (!again || Date.now() > this.deadline) return reply;
      const why = `${path} ${reply.status === 0 ? 'no answer' : reply.status}`;
      this.retries.set(why, (this.retries.get(why) ?? 0) + 1);
      await sleep(RETRY_MS);
    }
  }

  /**
   * GETs `path` until `done` picks a final answer (its outcome), backing off from 300 ms to 3 s;
   * undefined when the deadline passes first. `last` holds the last outcome-ish status seen.
   */
  async follow(
    path: string,
    caller: Caller,
    done: (body: Record<string, unknown>) => string | undefined,
    last: { seen: string },
  ): Promise<string | undefined> {
    for (let wait = 300; Date.now() < this.deadline; wait = Math.min(3_000, wait * 1.5)) {
      const reply = await this.call('GET', path, caller);
      if (reply.status === 200) {
        const outcome = done(reply.body);
        if (outcome) return outcome;
        last.seen = String(reply.body.status ?? last.seen);
      } else last.seen = `GET ${reply.status}`;
      await sleep(wait);
    }
    return undefined;
  }
}

const refused = (what: string, reply: Reply): Ended => ({
  state: 'refused',
  outcome: `${what} ${reply.status} ${String(reply.body.code ?? reply.body.title ?? reply.text.slice(0, 80))}`,
});
const lost = (last: { seen: string }): Ended => ({ state: 'lost', outcome: last.seen });

const money = (value: number) => ({ value, currency: 'KES' });

/** A transaction's final status, with its failure reason. */
const transactionFinal = (body: Record<string, unknown>) =>
  body.status === 'POSTED' ? 'POSTED' : body.status === 'FAILED' ? `FAILED ${String(body.failure_reason)}` : undefined;

/**
 * A mobile-money transaction (POST stk-push or send-money) between `account` and `phone`, followed
 * to POSTED or FAILED: how it ended, and once accepted its id (`started` gets it too) and the last
 * status seen.
 */
async function moveMoney(
  api: ApiClient,
  caller: Caller,
  kind: 'stk-push' | 'send-money',
  order: { account: string; phone: string; amount: number; key: string },
  started: (transactionId: string) => void,
): Promise<{ ended: Ended; id?: string; last?: { seen: string } }> {
  const reply = await api.keyed(
    `/v1/transactions/mobilemoney/${kind}`,
    caller,
    { account_id: order.account, amount: money(order.amount), mobile_number: order.phone },
    order.key,
  );
  if (reply.status !== 201) return { ended: refused(kind, reply) };
  const id = String(reply.body.id);
  started(id);
  const last = { seen: 'PENDING' };
  const outcome = await api.follow(`/v1/transactions/${id}`, caller, transactionFinal, last);
  return { ended: outcome ? { state: 'final', outcome } : lost(last), id, last };
}

/**
 * A push prompt (POST stk-push) to `account` from `phone`, followed to POSTED or FAILED; a POSTED
 * push on a credit account is a repayment, followed on until the account's installment
 * transactions list it (allocated). `started` gets the transaction id once accepted.
 */
export async function push(
  api: ApiClient,
  caller: Caller,
  order: { account: string; credit: boolean; phone: string; amount: number; key: string },
  started: (transactionId: string) => void,
): Promise<Ended> {
  const { ended, id, last } = await moveMoney(api, caller, 'stk-push', order, started);
  if (!order.credit || ended.state !== 'final' || ended.outcome !== 'POSTED' || !last) return ended;
  last.seen = 'POSTED, not allocated';
  const allocated = await api.follow(
    `/v1/accounts/${order.account}/installments/transactions?size=100`,
    caller,
    (body) =>
      (body.data as { transaction: { id: string } }[]).some((row) => row.transaction.id === id)
        ? 'POSTED allocated'
        : undefined,
    last,
  );
  return allocated ? { state: 'final', outcome: allocated } : lost(last);
}

/** A payout (POST send-money) from a current account to `phone`, followed to POSTED or FAILED. */
export async function sendMoney(
  api: ApiClient,
  caller: Caller,
  order: { account: string; phone: string; amount: number; key: string },
  started: (transactionId: string) => void,
): Promise<Ended> {
  return (await moveMoney(api, caller, 'send-money', order, started)).ended;
}

/** A few bytes with a JPEG's magic: what the service and the KYC simulator look at. */
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 9, 8, 7, 6, 5, 4]).toString(
  'base64',
);

/**
 * A KYC verification by server upload: the application (POST), its requirements (GET), the
 * images and ID number (POST, 202), then the status until the verdict. The ID number's last
 * digit is the simulator's verdict (0 approved, 1 no match, 2 not found, 3 spoof).
 */
export async function verifyIdentity(
  api: ApiClient,
  caller: Caller,
  idNumber: string,
  started: (applicationId: string) => void,
): Promise<Ended> {
  const created = await api.call('POST', '/v1/kyc/applications', caller);
  if (created.status !== 201) return refused('application', created);
  const id = String(created.body.id);
  const path = `/v1/kyc/applications/${id}`;
  const requirements = await api.call('GET', `${path}/verification`, caller);
  if (requirements.status !== 200) return refused('requirements', requirements);
  const submitted = await api.call('POST', `${path}/verification`, caller, {
    json: {
      channel: 'server_upload',
      id_type: 'IDENTITY_CARD',
      country: 'KE',
      id_number: idNumber,
      selfie: JPEG,
      document_front: JPEG,
      document_back: JPEG,
      consent: true,
    },
  });
  if (submitted.status !== 202) return refused('verification', submitted);
  started(id);
  const last = { seen: 'ID_VERIFICATION_PENDING' };
  const outcome = await api.follow(
    `${path}/status`,
    caller,
    (body) =>
      body.status === 'DRAFT' || body.status === 'ID_VERIFICATION_PENDING' || body.needs_review === true
        ? undefined
        : String(body.status),
    last,
  );
  return outcome ? { state: 'final', outcome } : lost(last);
}

/**
 * A loan: eligibility and the offer (POST /v1/accounts/loan/applications/{organization}), then
 * taking it (POST partner-b, keyed), which holds the collateral and disburses the principal into
 * the current account, DISBURSED. `started` gets the application id once the offer is taken.
 */
export async function takeLoan(
  api: ApiClient,
  caller: Caller,
  order: { organizationId: string; amount: number; weeks: number; collateral: number; key: string },
  started: (applicationId: string) => void,
): Promise<Ended> {
  const offer = await api.call('POST', `/v1/accounts/loan/applications/${order.organizationId}`, caller, { json: {} });
  if (offer.status !== 201 && offer.status !== 200) return refused('offer', offer);
  const applicationId = String(offer.body.id);
  const applied = await api.keyed(
    '/v1/accounts/loan/applications/partner-b',
    caller,
    {
      application_id: applicationId,
      loan_amount: order.amount,
      tenure: { duration: order.weeks, unit: 'WEEKS' },
      collateral_amount: order.collateral,
    },
    order.key,
  );
  if (applied.status !== 200) return refused('apply', applied);
  started(applicationId);
  return applied.body.status === 'DISBURSED'
    ? { state: 'final', outcome: 'DISBURSED' }
    : { state: 'lost', outcome: String(applied.body.status) };
}

/** The newest six-digit code the SMS gateway simulator texted to `phone` (as the phone shows it). */
export async function codeTexted(smsUrl: string, phone: string, api: ApiClient): Promise<string | undefined> {
  for (let wait = 300; Date.now() < api.deadline; wait = Math.min(3_000, wait * 1.5)) {
    const texts = (await (await fetch(`${smsUrl}/_control/messages?to=${encodeURIComponent(phone)}`)).json()) as {
      message: string;
    }[];
    const code = texts.length > 0 ? /(\d{6}) is your code/.exec(texts.at(-1)!.message)?.[1] : undefined;
    if (code) return code;
    await sleep(wait);
  }
  return undefined;
}

/**
 * A current-account activation: started (POST), its code read from the SMS gateway simulator as
 * the customer reads their phone, confirmed (POST, keyed), then followed until the bank opened
 * the account (COMPLETED) or it was REJECTED.
 */
export async function activate(
  api: ApiClient,
  caller: Caller,
  order: { phone: string; smsUrl: string; key: string },
  started: (activationId: string) => void,
): Promise<Ended> {
  const path = '/v1/user/accounts/current/activation';
  const begun = await api.call('POST', path, caller);
  if (begun.status !== 201 && begun.status !== 200) return refused('activation', begun);
  started(String(begun.body.id));
  const last = { seen: String(begun.body.status) };
  const code = await codeTexted(order.smsUrl, order.phone, api);
  if (!code) return lost({ seen: `${last.seen}, no code texted` });
  const confirmed = await api.keyed(`${path}/otp/confirm`, caller, { otp_code: code }, order.key);
  if (confirmed.status !== 200) return refused('confirm', confirmed);
  const outcome = await api.follow(
    path,
    caller,
    (body) =>
      body.status === 'COMPLETED'
        ? 'COMPLETED'
        : body.status === 'REJECTED'
          ? `REJECTED ${String(body.rejection_reason)}`
          : undefined,
    last,
  );
  return outcome ? { state: 'final', outcome } : lost(last);
}

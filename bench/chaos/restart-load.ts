import { randomUUID } from 'node:crypto';
import { mapBounded, poster } from '../lib';
import { type BenchBorrower, BENCH_LOAN, seedBorrowers, takeBenchLoans } from '../seed';
import type { ChaosDeployment } from './deployment';
import { below, sleep } from './random';

/**
 * The steady flow the restarts suite keeps up while it takes Postgres and Temporal down: STK
 * pushes into borrowers' current accounts and repayments (pushes on their credit accounts, each
 * allocated by the loan's run), sent as a careful client does, plus the readiness probe polled.
 */

const PUSH_AMOUNT = 1_000;
/** A request gets this long to answer (a start waits out the Temporal client's own retries, about 20 s). */
const REQUEST_TIMEOUT_MS = 60_000;
/**
 * A client sends a push again for this long while told to: past an outage, and past the lock a
 * killed API instance left on the key (IDEMPOTENCY_LOCK_TIMEOUT, 60 s), which the next try then
 * takes over and finishes.
 */
const RETRY_FOR_MS = 90_000;
/** Answers a client sends again, after Retry-After: the dependency is down, or the key's first try still holds it (and a proxy's 502). */
const RETRIED = new Set(['SERVICE_UNAVAILABLE', 'IDEMPOTENCY_REQUEST_IN_PROGRESS']);

export interface Borrower extends BenchBorrower {
  phone: string;
  /** The number repayments come from (any payer may repay; the simulator pays numbers ending in 0). */
  payer: string;
  token: string;
}

/** Borrowers with KYC approved, a funded current account and an ACTIVE loan taken through the API. */
export async function prepareBorrowers(deployment: ChaosDeployment, count: number): Promise<Borrower[]> {
  const rows = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    current: randomUUID(),
    credit: randomUUID(),
    phone: `+25471${String(i).padStart(6, '0')}0`,
    payer: `+25473${String(i).padStart(6, '0')}0`,
  }));
  await seedBorrowers(deployment.db, deployment.organizationId, rows, BENCH_LOAN.deposit);
  const borrowers = await mapBounded(rows, async (b) => ({ ...b, token: await deployment.token(b.id) }));
  const call = poster(
    deployment.apiUrl,
    borrowers.map((b) => b.token),
  );
  await takeBenchLoans(call, deployment.temporal, deployment.organizationId, count);
  return borrowers;
}

/** One answer the API gave: when (ms since the epoch), its status (0: none), and for a 503 whether it had the error shape. */
export interface Answer {
  at: number;
  /** When it came (ms since the epoch; unset while none has). */
  answeredAt?: number;
  status: number;
  /** A 503 in the plain error family's shape ({code: SERVICE_UNAVAILABLE, description}) with Retry-After. */
  wellFormed503?: boolean;
  /** The error's code, when the answer is an error in the spec's shape. */
  code?: string;
  /** The start of the body of an answer other than 201 and 503, for the diagnosis. */
  sample?: string;
}

/** A push a client asked for: its transaction once accepted (201). */
export interface Operation {
  repayment: boolean;
  sentAt: number;
  id?: string;
}

/**
 * A push (`repayment`: on the credit account) as a client sends it: under an Idempotency-Key,
 * sent again with the same key while the answer says to retry (503, or 409 in progress, after
 * its Retry-After) for `retryForMs`. Every answer goes to `answers`.
 */
export async function sendPush(
  apiUrl: string,
  borrower: Borrower,
  repayment: boolean,
  answers: Answer[],
  retryForMs = RETRY_FOR_MS,
): Promise<Operation> {
  const operation: Operation = { repayment, sentAt: Date.now() };
  const key = randomUUID();
  const body = JSON.stringify({
    account_id: repayment ? borrower.credit : borrower.current,
    amount: { value: PUSH_AMOUNT, currency: 'KES' },
    mobile_number: repayment ? borrower.payer : borrower.phone,
  });
  for (const giveUpAt = Date.now() + retryForMs; ;) {
    const answer: Answer = { at: Date.now(), status: 0 };
    answers.push(answer);
    let retryAfter = 1;
    try {
      const response = await fetch(`${apiUrl}/v1/transactions/mobilemoney/stk-push`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${borrower.token}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      answer.status = response.status;
      answer.answeredAt = Date.now();
      const parsed = parseJson(text);
      if (response.status === 201) return { ...operation, id: String(parsed.id) };
      if (typeof parsed.code === 'string') answer.code = parsed.code;
      if (response.status === 503) answer.wellFormed503 = wellFormed503(parsed, response.headers);
      else answer.sample = text.slice(0, 200);
      // A 502 is the load balancer's: the instance died with the request, which may have run.
      if (!RETRIED.has(String(parsed.code)) && response.status !== 502) return operation;
      retryAfter = Number(response.headers.get('retry-after') ?? 1) || 1;
    } catch (error) {
      answer.sample = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() + retryAfter * 1000 > giveUpAt) return operation;
    await sleep(retryAfter * 1000);
  }
}

function parseJson(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function wellFormed503(body: Record<string, unknown>, headers: Headers): boolean {
  const keys = Object.keys(body).sort().join(',');
  return (
    keys === 'code,description' &&
    body.code === 'SERVICE_UNAVAILABLE' &&
    typeof body.description === 'string' &&
    /^\d+$/.test(headers.get('retry-after') ?? '')
  );
}

/**
 * Pushes at `rate` a second, each to a borrower drawn at random, a third of them repayments,
 * each sent at its moment whatever earlier ones are doing, until `stop()`; `done` resolves once
 * every one sent has its answer.
 */
export function steadyFlow(options: {
  apiUrl: string;
  borrowers: Borrower[];
  rate: number;
  next: () => number;
  answers: Answer[];
}): { operations: Operation[]; stop(): void; done: Promise<void> } {
  const operations: Operation[] = [];
  const inFlight: Promise<void>[] = [];
  let stopped = false;
  const done = (async () => {
    const started = Date.now();
    for (let i = 0; !stopped; i++) {
      await sleep(started + (i * 1000) / options.rate - Date.now());
      if (stopped) break;
      const borrower = options.borrowers[below(options.next, options.borrowers.length)]!;
      const repayment = below(options.next, 3) === 0;
      inFlight.push(
        sendPush(options.apiUrl, borrower, repayment, options.answers).then((op) => void operations.push(op)),
      );
    }
    await Promise.all(inFlight);
  })();
  return {
    operations,
    stop: () => {
      stopped = true;
    },
    done,
  };
}

/** One answer of GET /readyz: when it was asked and answered, and its status (0: no answer within 5 s). */
export interface ReadinessPoll {
  sentAt: number;
  answeredAt: number;
  status: number;
}

/** Polls GET /readyz every `everyMs` until stopped, keeping every answer. */
export function pollReadiness(apiUrl: string, everyMs = 250): { polls: ReadinessPoll[]; stop(): Promise<void> } {
  const polls: ReadinessPoll[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sentAt = Date.now();
      let status = 0;
      try {
        const response = await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5_000) });
        await response.arrayBuffer();
        status = response.status;
      } catch {
        // No answer: recorded as 0.
      }
      polls.push({ sentAt, answeredAt: Date.now(), status });
      await sleep(sentAt + everyMs - Date.now());
    }
  })();
  return {
    polls,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** Where a transaction stands, as its owner reads it (GET /v1/transactions/{id}); undefined when the read fails. */
export async function transactionStatus(apiUrl: string, borrower: Borrower, id: string): Promise<string | undefined> {
  try {
    const response = await fetch(`${apiUrl}/v1/transactions/${id}`, {
      headers: { authorization: `Bearer ${borrower.token}` },
      signal: AbortSignal.timeout(5_000),
    });
    if (response.status !== 200) return undefined;
    return String(((await response.json()) as { status?: unknown }).status);
  } catch {
    return undefined;
  }
}

/**
 * Milliseconds from `since` until a push sent after it is POSTED end to end (accepted by the API,
 * prompted, called back, posted, read back through the API): a new push every two seconds until
 * one is, the first to finish counting. Undefined when none is within `deadlineMs`.
 */
export async function firstPushThrough(
  apiUrl: string,
  borrower: Borrower,
  since: number,
  deadlineMs: number,
  operations: Operation[],
  answers: Answer[],
): Promise<number | undefined> {
  let through: number | undefined;
  const probes: Promise<void>[] = [];
  const probe = async () => {
    // Sent again while told to, as any client under a key (a probe that gave up would leave its
    // transaction PENDING with no run: the 503 tells it to send the same request again).
    const operation = await sendPush(apiUrl, borrower, false, answers);
    operations.push(operation);
    while (operation.id && through === undefined && Date.now() - since < deadlineMs) {
      const status = await transactionStatus(apiUrl, borrower, operation.id);
      if (status === 'POSTED') through ??= Date.now() - since;
      else if (status === 'FAILED') return;
      else await sleep(250);
    }
  };
  while (through === undefined && Date.now() - since < deadlineMs) {
    probes.push(probe());
    await sleep(2_000);
  }
  await Promise.all(probes);
  return through;
}

import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { mapBounded, poster } from '../lib';
import { BENCH_LOAN, JPEG, seedApplicants, seedBorrowers, seedUsers, takeBenchLoans } from '../seed';
import { below, seeded, shuffled } from './random';

/**
 * The callback chaos suite's workload: operations drawn from the seed, each given what decides
 * its outcome at the simulators (a phone number's or ID number's last digit, a per-user KYC
 * outcome), so the clean run and the chaos run ask the providers for the same things. Each run
 * gets users of its own in its own database; operations line up across runs by their index.
 */
export type OperationKind = 'stk_push' | 'send_money' | 'repayment' | 'kyc_v2' | 'kyc_v3' | 'activation';

export interface Operation {
  index: number;
  kind: OperationKind;
  /** The last digit of the number that decides the outcome (payer, recipient or ID number). */
  digit: number;
  /** A v3 verification's outcome (set per user at the KYC simulator). */
  outcome?: string;
  /** Minor units, whole shillings. */
  amount: number;
}

export type Sizes = Record<OperationKind, number>;

/**
 * Outcome digits, paid/approved ones weighted up (see the simulators' outcome tables): a push 0
 * paid, 1 cancelled, 2 unreachable, 3 insufficient, 4 wrong PIN, 5 expired, 6 a string code; a
 * payout 0/9 paid, 3 no float, 4 initiator, 7 queue timeout, 8 unregistered; an ID number 0
 * approved, 1 no match, 2 not found, 3 spoof, 4/5 review then approved/rejected, 9 error.
 */
const DIGITS: Record<OperationKind, number[]> = {
  stk_push: [0, 0, 0, 1, 2, 3, 4, 5, 6],
  send_money: [0, 0, 9, 3, 4, 7, 8],
  repayment: [0, 0, 1],
  kyc_v2: [0, 0, 1, 2, 3, 4, 5, 9],
  kyc_v3: [0],
  activation: [0],
};
const V3_OUTCOMES = ['approve', 'approve', 'reject', 'not_found', 'spoof', 'review_approve', 'review_reject', 'error'];

export function planOperations(seed: number, sizes: Sizes): Operation[] {
  const next = seeded(seed);
  const kinds = (Object.keys(sizes) as OperationKind[]).flatMap((kind) => Array<OperationKind>(sizes[kind]).fill(kind));
  return shuffled(next, kinds).map((kind, index) => ({
    index,
    kind,
    digit: DIGITS[kind][below(next, DIGITS[kind].length)]!,
    ...(kind === 'kyc_v3' && { outcome: V3_OUTCOMES[below(next, V3_OUTCOMES.length)] }),
    // KES 10 to 500: far below any float, loan or limit the operation meets.
    amount: (10 + below(next, 491)) * 100,
  }));
}

/** A user of one run, made for one operation. */
export interface Actor {
  id: string;
  current: string;
  credit: string;
  kycApplication: string;
  /** The registered number (a push on the current account comes from it). */
  phone: string;
  /** Where the money comes from or goes: the payer of a repayment, the recipient of a payout. */
  counterpart: string;
  idNumber: string;
  token: string;
}

const ORG_FUNDS = 10_000_000;
/** +2547, the operation kind, its index and its digit: unique in a run, the same in both runs. */
const number = (prefix: number, index: number, digit: number) =>
  `+2547${prefix}${String(index).padStart(6, '0')}${digit}`;

/**
 * Users for every operation, written straight to the run's database (customers with both
 * accounts, funded; borrowers with a loan taken through the API; applicants with no KYC yet;
 * current-account applicants awaiting activation), and their tokens.
 */
export async function prepareActors(options: {
  db: Knex;
  apiUrl: string;
  temporal: Client;
  organizationId: string;
  operations: Operation[];
  token(userId: string): Promise<string>;
}): Promise<Actor[]> {
  const { db, operations, organizationId: org } = options;
  const actors = operations.map((op): Omit<Actor, 'token'> => ({
    id: randomUUID(),
    current: randomUUID(),
    credit: randomUUID(),
    kycApplication: randomUUID(),
    phone: number(1, op.index, op.kind === 'stk_push' ? op.digit : 0),
    counterpart: number(2, op.index, op.digit),
    idNumber: String(30_000_000 + op.index),
  }));
  const of = (...kinds: OperationKind[]) => actors.filter((_, i) => kinds.includes(operations[i]!.kind));
  await seedBorrowers(db, org, of('stk_push', 'send_money'), ORG_FUNDS);
  await seedBorrowers(db, org, of('repayment'), BENCH_LOAN.deposit);
  await seedApplicants(db, org, of('activation'));
  await seedUsers(db, org, of('kyc_v2', 'kyc_v3'));
  const withTokens = await mapBounded(actors, async (a) => ({ ...a, token: await options.token(a.id) }));

  // Each borrower's loan: the offer (its run's first task done), then taking it.
  const call = poster(
    options.apiUrl,
    withTokens.map((a) => a.token),
  );
  const borrowers = operations.filter((op) => op.kind === 'repayment').map((op) => op.index);
  await takeBenchLoans(
    (b, path, body, expected) => call(borrowers[b]!, path, body, expected),
    options.temporal,
    org,
    borrowers.length,
  );
  return withTokens;
}

/** The images of a verification (the seeds' JPEG). */
const IMAGE = JPEG.toString('base64');

/** What an operation started: the transaction or the KYC application (an activation is found by its user). */
export interface Started {
  transactionId?: string;
  applicationId?: string;
}

/** Starts one operation through the public API, as its actor. */
export async function startOperation(
  apiUrl: string,
  op: Operation,
  actor: Actor,
  kyc: { outcome(userId: string, outcome: string): Promise<void> },
): Promise<Started> {
  const send = async (method: string, path: string, body: unknown, expected: number, headers = {}) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${actor.token}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const money = { value: op.amount, currency: 'KES' };
  switch (op.kind) {
    case 'stk_push':
    case 'repayment': {
      const account = op.kind === 'stk_push' ? actor.current : actor.credit;
      const mobile = op.kind === 'stk_push' ? actor.phone : actor.counterpart;
      const body = { account_id: account, amount: money, mobile_number: mobile };
      return { transactionId: (await send('POST', '/v1/transactions/mobilemoney/stk-push', body, 201)).id as string };
    }
    case 'send_money': {
      const body = { account_id: actor.current, amount: money, mobile_number: actor.counterpart };
      return { transactionId: (await send('POST', '/v1/transactions/mobilemoney/send-money', body, 201)).id as string };
    }
    case 'activation':
      await send('POST', '/v1/user/accounts/current/activation', undefined, 201);
      return {};
    default: {
      const version = op.kind === 'kyc_v2' ? 'v2' : 'v3';
      if (op.outcome) await kyc.outcome(actor.id, op.outcome);
      const id = (await send('POST', '/v1/kyc/applications', undefined, 201)).id as string;
      const versions = { 'X-Provider-Api-Versions': version };
      await send('GET', `/v1/kyc/applications/${id}/verification`, undefined, 200, versions);
      const upload = {
        channel: 'server_upload',
        id_type: 'IDENTITY_CARD',
        id_number: `2${String(op.index).padStart(6, '0')}${op.digit}`,
        selfie: IMAGE,
        document_front: IMAGE,
        consent: true,
        ...(version === 'v3' && { liveness_images: Array<string>(6).fill(IMAGE) }),
      };
      await send('POST', `/v1/kyc/applications/${id}/verification`, upload, 202, versions);
      return { applicationId: id };
    }
  }
}

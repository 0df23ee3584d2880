import { strict as assert } from 'node:assert';
import { randomInt, randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { ledgerAccounts, postJournal } from '../../db/ledger';
import { harness } from './harness';
import { call, type Reply } from './http';
import { applicantHeaders } from './kyc';

/**
 * A fresh customer of the demo organization with a current and a credit account. The mobile
 * number's last digit decides the simulator's outcome (see providers/simulators/mobile-money.ts):
 * 0 paid, 1 cancelled, 2 unreachable, 3 insufficient, 4 wrong PIN, 5 expired.
 */
export async function newCustomer(lastDigit = 0) {
  const { db } = harness();
  const phone = `+2547${String(randomInt(0, 10_000_000)).padStart(7, '0')}${lastDigit}`;
  const user = { id: randomUUID(), organization_id: DEMO.organizations.demo.id, email: `${randomUUID()}@demo-lender.test`, name: 'Test Payer', phone_number: phone };
  await db('users').insert(user);
  await db('user_access').insert({ user_id: user.id, organization_id: user.organization_id, role: 'CUSTOMER' });
  const current = randomUUID();
  const credit = randomUUID();
  await db('accounts').insert([
    { id: current, organization_id: user.organization_id, user_id: user.id, type: 'CURRENT', currency: 'KES' },
    { id: credit, organization_id: user.organization_id, user_id: user.id, type: 'CREDIT', currency: 'KES' },
  ]);
  return { user, phone, current, credit, headers: await applicantHeaders(user) };
}

/** Money already in an account, as if collected earlier (a balanced COLLECTION entry). */
export async function fund(accountId: string, amount: number) {
  await harness().db.transaction((trx) =>
    postJournal(trx, {
      transactionId: randomUUID(),
      kind: 'COLLECTION',
      currency: 'KES',
      legs: [
        { account: ledgerAccounts.collections, amount },
        { account: ledgerAccounts.customer(accountId), amount: -amount },
      ],
    }),
  );
}

export const money = (value: number) => ({ value, currency: 'KES' });

export function stkPush(headers: Record<string, string>, body: unknown, idempotencyKey?: string): Promise<Reply> {
  return call('POST', '/v1/transactions/mobilemoney/stk-push', { headers: { ...headers, ...(idempotencyKey && { 'Idempotency-Key': idempotencyKey }) }, json: body });
}
export function sendMoney(headers: Record<string, string>, body: unknown, idempotencyKey?: string): Promise<Reply> {
  return call('POST', '/v1/transactions/mobilemoney/send-money', { headers: { ...headers, ...(idempotencyKey && { 'Idempotency-Key': idempotencyKey }) }, json: body });
}

/** Polls GET /v1/transactions/{id} until the transaction is POSTED or FAILED. */
export async function settled(headers: Record<string, string>, id: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await call('GET', `/v1/transactions/${id}`, { headers });
    assert.equal(reply.status, 200, reply.text);
    if (reply.body.status === 'POSTED' || reply.body.status === 'FAILED') return reply.body;
    if (Date.now() > deadline) throw new Error(`transaction ${id} still ${reply.body.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The mobile-money simulator's control API. */
export function mobileMoneyControl(path: string, method: string, body?: unknown) {
  return fetch(`${harness().mobileMoney.url}/_control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

import { strict as assert } from 'node:assert';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { createMobileMoneyActivities } from '../../activities/mobile-money/index';
import { DEMO } from '../../db/seeds/demo';
import { systemClock } from '../../domain/clock';
import { accountBalance, ledgerAccounts, postJournal } from '../../db/ledger/ledger';
import { findTransaction, type TransactionRow } from '../../db/mobile-money/transactions';
import { feeFor } from '../../domain/mobile-money/transactions';
import type { SentCallback, SimulatedPayment, SimulatedPush, SimulatorMode } from '../../simulators/mobile-money';
import { harness } from './harness';
import { call, type Reply } from './http';
import { backendToken, bearer } from './tokens';
import { signUpCustomer } from '../../db/accounts/accounts';
import { reachStage, type Stage, type StageClient } from '../../dev/customer-stages';

type CustomerOptions = { stage?: Stage; name?: string; idNumber?: string; dateOfBirth?: string };
export type Customer = Awaited<ReturnType<typeof makeCustomer>>;

/**
 * A fresh customer of the demo organization with a current and a credit account, taken to
 * `stage` through the API as a client app takes them (dev/customer-stages.ts): by default
 * `active`, KYC approved and the current account activated at the bank. The mobile number's last
 * digit decides the mobile-money simulator's outcome (see simulators/mobile-money/):
 * 0 paid, 1 cancelled, 2 unreachable, 3 insufficient, 4 wrong PIN, 5 expired.
 *
 * The common kind (active, ending in 0) is made a few at a time, side by side, when none is left:
 * the flows are mostly waiting, so three take about the time of two.
 */
export function newCustomer(lastDigit = 0, options: CustomerOptions = {}): Promise<Customer> {
  const common =
    lastDigit === 0 && (options.stage ?? 'active') === 'active' && Object.keys(options).every((k) => k === 'stage');
  if (!common) return makeCustomer(lastDigit, options);
  if (spares.length === 0)
    for (let i = 0; i < SPARES; i++) {
      const made = makeCustomer(0, {});
      made.catch(() => undefined); // awaited by whoever takes it; a spare nobody takes fails nothing
      spares.push(made);
    }
  // Its token minted now: one minted with the spare could be signed by a key a test has rotated since.
  return spares
    .shift()!
    .then(async (customer) => ({ ...customer, headers: bearer(await backendToken(customer.user.id)) }));
}
const SPARES = 3;
const spares: Promise<Customer>[] = [];

/** A customer's way through the test run's API and SMS gateway simulator (dev/customer-stages.ts). */
export function stageClient(token: string): StageClient {
  const { baseUrl, config } = harness();
  return { apiUrl: baseUrl, smsUrl: config.SMS_PROVIDER_URL!, token };
}

async function makeCustomer(lastDigit: number, options: CustomerOptions) {
  const { db } = harness();
  const phone = `+2547${String(randomInt(0, 10_000_000)).padStart(7, '0')}${lastDigit}`;
  const user = {
    id: randomUUID(),
    organization_id: DEMO.organizations.demo.id,
    email: `${randomUUID()}@demo-lender.test`,
    name: options.name ?? 'Test Payer',
    phone_number: phone,
  };
  const { current, credit } = await signUpCustomer(db, user.organization_id, {
    id: user.id,
    email: user.email,
    name: user.name,
    phone,
    status: 'ACTIVE',
  });
  const token = await backendToken(user.id);
  await reachStage(stageClient(token), { phone }, options.stage ?? 'active', {
    idNumber: options.idNumber,
    dateOfBirth: options.dateOfBirth,
  });
  return { user, phone, current, credit, headers: bearer(token) };
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
  return call('POST', '/v1/transactions/mobilemoney/stk-push', {
    headers: { ...headers, ...(idempotencyKey && { 'Idempotency-Key': idempotencyKey }) },
    json: body,
  });
}
export function sendMoney(headers: Record<string, string>, body: unknown, idempotencyKey?: string): Promise<Reply> {
  return call('POST', '/v1/transactions/mobilemoney/send-money', {
    headers: { ...headers, ...(idempotencyKey && { 'Idempotency-Key': idempotencyKey }) },
    json: body,
  });
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

// ---------------------------------------------------------------------------------------------
// The simulator's view, the ledger's view and the recorded callbacks, for assertions.

/** A fresh payer number (not a customer's) ending in `lastDigit`: the simulator's outcome table. */
export const payerNumber = (lastDigit: number) =>
  `+2541${String(randomInt(0, 10_000_000)).padStart(7, '0')}${lastDigit}`;

/** `+2547...` as the provider writes it. */
export const providerPhone = (phone: string) => phone.replace(/^\+/, '');

async function controlJson<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const response = await mobileMoneyControl(path, method, body);
  const text = await response.text();
  assert.ok(response.ok, `simulator ${method} /_control${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Changes the simulator's modes; the change applies to requests it receives from now on. */
export const setSimulatorMode = (patch: Partial<SimulatorMode>) => controlJson<SimulatorMode>('/mode', 'PATCH', patch);

/**
 * Back to the default modes, forgetting every push, payment and callback it knows of. Only
 * after this test's transactions settled: a push it forgets can no longer be queried.
 */
export async function resetSimulator() {
  const response = await mobileMoneyControl('/reset', 'POST');
  assert.equal(response.status, 204);
}

/** The pushes the simulator received for one phone (`+254...`). */
export async function pushesTo(phone: string): Promise<SimulatedPush[]> {
  const pushes = await controlJson<SimulatedPush[]>('/pushes');
  return pushes.filter((p) => p.phone === providerPhone(phone));
}
export async function paymentsTo(phone: string): Promise<SimulatedPayment[]> {
  const payments = await controlJson<SimulatedPayment[]>('/b2c');
  return payments.filter((p) => p.phone === providerPhone(phone));
}
export const simulatorCallbacks = () => controlJson<SentCallback[]>('/callbacks');

/** Sends a result callback for a push or payment now (overrides as the simulator documents). */
export const sendCallbackNow = (id: string, overrides: Record<string, unknown> = {}) =>
  controlJson<SentCallback>(`/callbacks/${encodeURIComponent(id)}/send`, 'POST', overrides);

/** Journal entries of one transaction, with their legs. */
export async function journalOf(transactionId: string) {
  const { db } = harness();
  const entries: { id: string; kind: string; currency: string }[] = await db('journal_entries')
    .where({ transaction_id: transactionId })
    .orderBy('created_at');
  return Promise.all(
    entries.map(async (entry) => ({
      kind: entry.kind,
      currency: entry.currency,
      legs: (
        (await db('ledger_legs').where({ journal_entry_id: entry.id }).orderBy('leg')) as {
          ledger_account: string;
          amount: string;
        }[]
      ).map((l) => ({
        account: l.ledger_account,
        amount: Number(l.amount),
      })),
    })),
  );
}
export const journalKinds = async (transactionId: string) => (await journalOf(transactionId)).map((e) => e.kind).sort();

/** The callbacks recorded for one transaction (or for what a URL named), oldest first. */
export interface RecordedCallback {
  kind: string;
  disposition: string;
  raw: string;
  note: string | null;
  received_at: string;
}
export async function callbacksRecorded(transactionRef: string): Promise<RecordedCallback[]> {
  const rows: (Omit<RecordedCallback, 'received_at'> & { received_at: Date })[] = await harness()
    .db('mobile_money_callbacks')
    .where({ transaction_ref: transactionRef })
    .orderBy('id')
    .select('kind', 'disposition', 'raw', 'note', 'received_at');
  return rows.map((row) => ({ ...row, received_at: row.received_at.toISOString() }));
}

export async function transactionRow(id: string): Promise<TransactionRow> {
  const row = await findTransaction(harness().db, id);
  assert.ok(row, `no transaction ${id}`);
  return row;
}

/** Polls until `check` gives a truthy value. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** An account's balance from the ledger (balance, held, available; minor units). */
export async function balanceOf(accountId: string) {
  return accountBalance(harness().db, accountId);
}

/**
 * A PENDING transaction row exactly as POST stk-push creates it, for tests that start the
 * workflow themselves (e.g. on a task queue of their own).
 */
export async function insertStkPushTransaction(
  customer: { current: string; phone: string; user: { organization_id: string } },
  amount: number,
): Promise<TransactionRow> {
  const { db, config } = harness();
  const resourceId = `trx_${randomBytes(12).toString('base64url')}`;
  const [row] = await db('transactions')
    .insert({
      id: randomUUID(),
      resource_id: resourceId,
      organization_id: customer.user.organization_id,
      account_id: customer.current,
      type: 'STK_PUSH',
      status: 'PENDING',
      amount,
      fee_amount: feeFor('STK_PUSH', amount),
      currency: 'KES',
      mobile_number: customer.phone,
      details: {
        type: 'PAYBILL',
        direction: 'COLLECTION',
        account_id: customer.current,
        paybill_number: config.MOBILE_MONEY_SHORT_CODE,
        account_reference: resourceId.slice(-12),
      },
      callback_token: randomBytes(24).toString('base64url'),
      transacted_at: new Date(),
    })
    .returning('*');
  return row as TransactionRow;
}

/**
 * A PENDING payout row (SEND_MONEY, its fee and B2C details) to the customer's own phone, for
 * tests that start the run themselves.
 */
export async function insertPayoutTransaction(
  customer: { current: string; phone: string; user: { organization_id: string } },
  amount: number,
): Promise<TransactionRow> {
  const row = await insertStkPushTransaction(customer, amount);
  await harness()
    .db('transactions')
    .where({ id: row.id })
    .update({
      type: 'SEND_MONEY',
      fee_amount: feeFor('SEND_MONEY', amount),
      details: { type: 'B2C', direction: 'PAYOUT', account_id: customer.current },
    });
  return transactionRow(row.id);
}

/** POST stk-push that must be accepted: 201 PENDING. */
export async function pushAccepted(
  customer: { headers: Record<string, string>; current: string; phone: string },
  options: { amount?: number; account?: string; phone?: string } = {},
) {
  const reply = await stkPush(customer.headers, {
    account_id: options.account ?? customer.current,
    amount: money(options.amount ?? 50_000),
    mobile_number: options.phone ?? customer.phone,
  });
  assert.equal(reply.status, 201, reply.text);
  assert.equal(reply.body.status, 'PENDING');
  return reply.body as { id: string; resource_id: string };
}

/** The mobile-money activities over the run's database and providers, to run a step directly (as a rerun would). */
export function mobileMoneyActivities() {
  const { db, config, logger, deps } = harness();
  return createMobileMoneyActivities({
    db,
    config,
    logger,
    clock: systemClock,
    providers: deps.providers,
  });
}

/** provider_callbacks_refused_total of an API instance (the test API by default) for one reason, from /metrics. */
export async function refusedCallbacks(
  reason: string,
  options: { provider?: string; baseUrl?: string } = {},
): Promise<number> {
  const provider = options.provider ?? 'mobile_money';
  const text = (await call('GET', '/metrics', { baseUrl: options.baseUrl })).text;
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`provider_callbacks_refused_total{provider="${provider}",reason="${reason}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** A fresh customer whose current account holds `funded` (minor units). */
export async function fundedCustomer(funded: number) {
  const customer = await newCustomer(0);
  await fund(customer.current, funded);
  return customer;
}

/** POST send-money that must be accepted: 201 PENDING. */
export async function sendAccepted(
  customer: { headers: Record<string, string>; current: string },
  amount: number,
  to: string,
) {
  const reply = await sendMoney(customer.headers, {
    account_id: customer.current,
    amount: money(amount),
    mobile_number: to,
  });
  assert.equal(reply.status, 201, reply.text);
  assert.equal(reply.body.status, 'PENDING');
  return reply.body as { id: string; fee_amount: { value: number; currency: string } };
}

/** Posts a callback body to one of a transaction's callback URLs, as the provider (or a forger holding the token) would. */
export function postCallback(
  kind: 'stk' | 'b2c/result' | 'b2c/timeout',
  row: Pick<TransactionRow, 'id' | 'callback_token'>,
  body: unknown,
  baseUrl?: string,
): Promise<Reply> {
  const [first, outcome] = kind.split('/');
  const path = `/v1/transactions/mobilemoney/callbacks/${first}/${row.id}/${row.callback_token}${outcome ? `/${outcome}` : ''}`;
  return call('POST', path, { json: body, baseUrl });
}

/** The push's CheckoutRequestID, once the push request was answered and it was recorded. */
export const checkoutRequestOf = (id: string) =>
  until('push accepted', async () => (await transactionRow(id)).checkout_request_id);

/** A paid push callback as the provider sends it (`{Body: {stkCallback}}`), for the given request ids and payment. */
export function paidStkCallback(
  row: Pick<TransactionRow, 'merchant_request_id' | 'checkout_request_id'>,
  payment: { amountShillings: number; receipt: string; phone: string; transactionDate?: number },
) {
  return {
    Body: {
      stkCallback: {
        MerchantRequestID: row.merchant_request_id,
        CheckoutRequestID: row.checkout_request_id,
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        CallbackMetadata: {
          Item: [
            { Name: 'Amount', Value: payment.amountShillings },
            { Name: 'MpesaReceiptNumber', Value: payment.receipt },
            { Name: 'TransactionDate', Value: payment.transactionDate ?? 20260101120000 },
            { Name: 'PhoneNumber', Value: Number(providerPhone(payment.phone)) },
          ],
        },
      },
    },
  };
}

/** A B2C Result body as the provider sends it, with the fields a test sets. */
export function b2cResult(fields: {
  originator: string;
  conversation: string;
  code: number | string;
  amount?: number;
  receipt?: string;
  receiver?: string;
}) {
  const parameters =
    fields.code === 0
      ? [
          { Key: 'TransactionAmount', Value: fields.amount },
          { Key: 'TransactionReceipt', Value: fields.receipt },
          { Key: 'ReceiverPartyPublicName', Value: fields.receiver },
        ].filter((p) => p.Value !== undefined)
      : [];
  return {
    Result: {
      ResultType: 0,
      ResultCode: fields.code,
      ResultDesc: fields.code === 0 ? 'The service request is processed successfully.' : 'Refused',
      OriginatorConversationID: fields.originator,
      ConversationID: fields.conversation,
      ...(fields.receipt && { TransactionID: fields.receipt }),
      ...(parameters.length > 0 && { ResultParameters: { ResultParameter: parameters } }),
    },
  };
}

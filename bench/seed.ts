import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import { ledgerAccounts } from '../db/ledger/ledger';
import { workflowIds } from '../workflows/ids';
import { offerStateQuery } from '../workflows/loans/messages';
import { inBatches } from './lib';

export interface BenchBorrower {
  id: string;
  current: string;
  credit: string;
  /** The registered phone, when the bench needs one (current-account pushes come from it). */
  phone?: string;
  /** The id of the APPROVED KYC application, when the bench needs it (its documents refer to it). */
  kycApplication?: string;
}

/**
 * Borrowers of `organizationId` written in bulk, in chunks: each a customer with KYC approved, an
 * activated current account (activatedEarlier) and a credit account, and `deposit` (minor units; none when 0) in the current account
 * as a balanced COLLECTION entry (what collateral is held from).
 */
export async function seedBorrowers(
  db: Knex,
  organizationId: string,
  borrowers: BenchBorrower[],
  deposit: number,
): Promise<void> {
  for (let i = 0; i < borrowers.length; i += 1_000) {
    const chunk = borrowers.slice(i, i + 1_000);
    await db('users').insert(
      chunk.map((b) => ({
        id: b.id,
        organization_id: organizationId,
        email: `${b.id}@bench.test`,
        ...(b.phone && { phone_number: b.phone }),
      })),
    );
    await db('user_access').insert(
      chunk.map((b) => ({ user_id: b.id, organization_id: organizationId, role: 'CUSTOMER' })),
    );
    await db('kyc_applications').insert(
      chunk.map((b) => ({
        id: b.kycApplication ?? randomUUID(),
        organization_id: organizationId,
        user_id: b.id,
        status: 'APPROVED',
        outcome: 'PASS',
      })),
    );
    await db('accounts').insert(
      chunk.flatMap((b) => [
        {
          id: b.current,
          organization_id: organizationId,
          user_id: b.id,
          type: 'CURRENT',
          currency: 'KES',
          ...activatedEarlier(b.current),
        },
        { id: b.credit, organization_id: organizationId, user_id: b.id, type: 'CREDIT', currency: 'KES' },
      ]),
    );
    if (deposit === 0) continue;
    await db.transaction(async (trx) => {
      const entries = (await trx('journal_entries')
        .insert(chunk.map(() => ({ transaction_id: randomUUID(), kind: 'COLLECTION', currency: 'KES' })))
        .returning('id')) as { id: string }[];
      await trx('ledger_legs').insert(
        chunk.flatMap((b, j) => [
          { journal_entry_id: entries[j]!.id, leg: 1, ledger_account: ledgerAccounts.collections, amount: deposit },
          {
            journal_entry_id: entries[j]!.id,
            leg: 2,
            ledger_account: ledgerAccounts.customer(b.current),
            amount: -deposit,
          },
        ]),
      );
    });
  }
}

/**
 * What an activation leaves on a current account (the bank's customer and account numbers), for
 * bulk fixtures of thousands: dev/customer-stages.ts takes one customer through the real flow in
 * about a second and a half, too slow for a load run's setup. Tests and the CLI use the flow.
 */
export const activatedEarlier = (accountId: string) => ({
  status: 'ACTIVE',
  bank_customer_id: `bench-${accountId}`,
  bank_account_number: `99${accountId.replace(/\D/g, '').slice(0, 10)}`,
});

export interface BenchApplicant extends BenchBorrower {
  phone: string;
  kycApplication: string;
  /** The identity card's number: one per applicant (the bank refuses a second customer with the same). */
  idNumber: string;
}

/** A tiny JPEG (its magic bytes are what the bank and the KYC simulator check). */
export const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 7)]);

/**
 * Applicants for a current account, written in bulk: borrowers (seedBorrowers, no deposit) whose
 * current account waits for activation (PENDING_ACTIVATION), each with a provisioned KYC subject
 * (a full name, date of birth, an ID card with its number, its front and back and a selfie).
 */
export async function seedApplicants(db: Knex, organizationId: string, applicants: BenchApplicant[]): Promise<void> {
  await seedBorrowers(db, organizationId, applicants, 0);
  for (let i = 0; i < applicants.length; i += 1_000) {
    const chunk = applicants.slice(i, i + 1_000);
    await db('accounts')
      .whereIn(
        'id',
        chunk.map((a) => a.current),
      )
      .update({ status: 'PENDING_ACTIVATION', bank_customer_id: null, bank_account_number: null });
    await db('kyc_subjects').insert(
      chunk.map((a) => ({
        id: randomUUID(),
        organization_id: organizationId,
        user_id: a.id,
        type: 'individual',
        name: 'Amina Wanjiru Otieno',
        date_of_birth: '1990-04-12',
        identity_type: 'IDENTITY_CARD',
        id_number: a.idNumber,
        country: 'KE',
      })),
    );
    await db('kyc_documents').insert(
      chunk.flatMap((a) =>
        (['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE'] as const).map((kind) => ({
          id: randomUUID(),
          organization_id: organizationId,
          application_id: a.kycApplication,
          kind,
          position: 0,
          content_type: 'image/jpeg',
          content: JPEG,
          sha256: randomUUID(),
        })),
      ),
    );
  }
}

/** Customers of the organization with nothing but their user (no KYC, no accounts): KYC applicants. */
export async function seedUsers(
  db: Knex,
  organizationId: string,
  users: { id: string; phone: string }[],
): Promise<void> {
  if (users.length === 0) return;
  await db('users').insert(
    users.map((u) => ({
      id: u.id,
      organization_id: organizationId,
      email: `${u.id}@chaos.test`,
      name: 'Chaos Applicant',
      phone_number: u.phone,
    })),
  );
  await db('user_access').insert(
    users.map((u) => ({ user_id: u.id, organization_id: organizationId, role: 'CUSTOMER' })),
  );
}

/**
 * The loan the benchmarks' and chaos suites' borrowers take: the first-loan limit over four weeks,
 * so repayments of a few shillings leave it ACTIVE; `deposit` is what seedBorrowers gives each for
 * the collateral.
 */
export const BENCH_LOAN = { amount: 1_000_000, collateral: 100_000, deposit: 200_000, weeks: 4 };

/**
 * Each of `count` borrowers takes BENCH_LOAN through the API, as `call(i, …)` (bench/lib poster):
 * the offer (waiting for its run's first task: applying needs the offer made), then partner-b,
 * which must answer DISBURSED. Answers the application ids.
 */
export async function takeBenchLoans(
  call: (i: number, path: string, body: unknown, expected: number) => Promise<Record<string, unknown>>,
  temporal: Client,
  organizationId: string,
  count: number,
): Promise<string[]> {
  const offers: string[] = [];
  await inBatches(count, async (i) => {
    const offer = (await call(i, `/v1/accounts/loan/applications/${organizationId}`, {}, 201)).id as string;
    await temporal.workflow.getHandle(workflowIds.loanApplication(offer)).query(offerStateQuery);
    const applied = await call(
      i,
      '/v1/accounts/loan/applications/partner-b',
      {
        application_id: offer,
        loan_amount: BENCH_LOAN.amount,
        tenure: { duration: BENCH_LOAN.weeks, unit: 'WEEKS' },
        collateral_amount: BENCH_LOAN.collateral,
      },
      200,
    );
    if (applied.status !== 'DISBURSED') throw new Error(`apply answered ${String(applied.status)}`);
    offers[i] = offer;
  });
  return offers;
}

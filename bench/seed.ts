import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ledgerAccounts } from '../db/ledger/ledger';

export interface BenchBorrower {
  id: string;
  current: string;
  credit: string;
  /** The registered phone, when the bench needs one (current-account pushes come from it). */
  phone?: string;
}

/**
 * Borrowers of `organizationId` written in bulk, in chunks: each a customer with KYC approved, a
 * current and a credit account, and `deposit` (minor units) in the current account as a
 * balanced COLLECTION entry (what collateral is held from).
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
        id: randomUUID(),
        organization_id: organizationId,
        user_id: b.id,
        status: 'APPROVED',
        outcome: 'PASS',
      })),
    );
    await db('accounts').insert(
      chunk.flatMap((b) => [
        { id: b.current, organization_id: organizationId, user_id: b.id, type: 'CURRENT', currency: 'KES' },
        { id: b.credit, organization_id: organizationId, user_id: b.id, type: 'CREDIT', currency: 'KES' },
      ]),
    );
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

import type { Knex } from 'knex';
import type { Clock } from '../../domain/clock';
import { findUserById, hasAccess } from './users';

/** A refresh token, stored by its SHA-256 only; tokens rotated from one sign-in share a family. */
export interface RefreshTokenRow {
  id: string;
  family_id: string;
  user_id: string;
  organization_id: string;
  token_hash: string;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
  /** The token this one was rotated to, and its answer sealed (db/migrations/20261211100000_refresh_token_successors.ts). */
  successor_id: string | null;
  successor_answer: Buffer | null;
}

/** The user and organization a refresh-token family signs in. */
export interface RefreshSession {
  userId: string;
  organizationId: string;
}

/** Stores a refresh token of the user's session in its organization. */
export async function insertRefreshToken(
  db: Knex,
  organizationId: string,
  token: Pick<RefreshTokenRow, 'id' | 'family_id' | 'user_id' | 'token_hash' | 'created_at' | 'expires_at'>,
): Promise<void> {
  await db('refresh_tokens').insert({ ...token, organization_id: organizationId });
}

/** What a rotation made: its successor's id, and the answer sealed for a retry within the leeway. */
export interface Rotation<T> {
  successorId: string;
  sealedAnswer: Buffer;
  answer: T;
}

export type SpentRefreshToken<T> =
  | { readonly ok: false; readonly reason: string }
  | { readonly ok: true; readonly session: RefreshSession; readonly issued: T }
  /** The same token again within the leeway, its successor unused: the first answer, still sealed. */
  | { readonly ok: true; readonly session: RefreshSession; readonly sealedAnswer: Buffer };

/**
 * Spends the refresh token with this hash in one transaction, under its family's lock.
 *
 * - A fresh one is marked used and `rotate` stores its successor in the same transaction; the
 *   successor's id and the sealed answer are kept on the spent token, until the successor is
 *   spent in turn or the family revoked (then it is cleared: it can no longer be asked for).
 * - A spent one sent again within `leewayMs` of its use, while its successor is unused and
 *   nothing is revoked, answers the sealed first answer: the client lost it on the way back
 *   (the grace period identity providers give rotated refresh tokens). Any other spent one, and
 *   a revoked one, revokes the family: a stolen token in use.
 * - An expired one, or one whose user is disabled or lost access, is refused.
 *
 * Refusals are returned, not thrown, so a revocation commits. No organization first: the token
 * is how it is learnt.
 */
export async function spendRefreshToken<T>(
  db: Knex,
  tokenHash: string,
  clock: Clock,
  leewayMs: number,
  rotate: (trx: Knex.Transaction, session: RefreshSession, familyId: string) => Promise<Rotation<T>>,
): Promise<SpentRefreshToken<T>> {
  return db.transaction(async (trx) => {
    const found = await trx('refresh_tokens')
      .where({ token_hash: tokenHash })
      .first<{ family_id: string } | undefined>('family_id');
    if (!found) return { ok: false, reason: 'unknown refresh token' } as const;
    // Every refresh of a family runs under the family's lock, so a reuse that revokes the
    // family sees every token the family has, including one issued a moment ago.
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [found.family_id]);
    const row = await trx('refresh_tokens')
      .where({ token_hash: tokenHash })
      .forUpdate()
      .first<RefreshTokenRow | undefined>();
    if (!row) return { ok: false, reason: 'unknown refresh token' } as const;
    const now = clock.now();
    const retried = row.used_at && !row.revoked_at && (await lostAnswer(trx, row, now, leewayMs));
    if ((row.used_at || row.revoked_at) && !retried) {
      await trx('refresh_tokens')
        .where({ family_id: row.family_id })
        .whereNull('revoked_at')
        .update({ revoked_at: now, successor_answer: null });
      return {
        ok: false,
        reason: row.revoked_at ? 'revoked refresh token' : 'refresh token reused: family revoked',
      } as const;
    }
    if (row.expires_at.getTime() <= now.getTime()) return { ok: false, reason: 'expired refresh token' } as const;
    const user = await findUserById(trx, row.user_id);
    const access = await hasAccess(trx, row.organization_id, row.user_id);
    if (!user || user.status === 'DISABLED' || !access)
      return { ok: false, reason: 'user no longer has access' } as const;
    const session = { userId: row.user_id, organizationId: row.organization_id };
    if (retried) return { ok: true, session, sealedAnswer: row.successor_answer! } as const;
    const rotation = await rotate(trx, session, row.family_id);
    await trx('refresh_tokens')
      .where({ id: row.id })
      .update({ used_at: now, successor_id: rotation.successorId, successor_answer: rotation.sealedAnswer });
    // This token's own answer, kept on the token it succeeded, can no longer be asked for: forget it.
    await trx('refresh_tokens')
      .where({ family_id: row.family_id, successor_id: row.id })
      .update({ successor_answer: null });
    return { ok: true, session, issued: rotation.answer } as const;
  });
}

/** Whether a spent token is its own answer lost: sent again within the leeway, its successor unused. */
async function lostAnswer(trx: Knex.Transaction, row: RefreshTokenRow, now: Date, leewayMs: number) {
  if (!row.used_at || !row.successor_id || !row.successor_answer) return false;
  if (now.getTime() - row.used_at.getTime() > leewayMs) return false;
  const successor = await trx('refresh_tokens')
    .where({ id: row.successor_id, family_id: row.family_id })
    .first<Pick<RefreshTokenRow, 'used_at' | 'revoked_at'> | undefined>('used_at', 'revoked_at');
  return successor !== undefined && !successor.used_at && !successor.revoked_at;
}

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

export type SpentRefreshToken =
  | { readonly ok: false; readonly reason: string }
  | { readonly ok: true; readonly session: RefreshSession; readonly refreshToken: string };

/**
 * Spends the refresh token with this hash in one transaction, under its family's lock: a spent or
 * revoked one revokes the family; an expired one, or one whose user is disabled or lost access, is
 * refused; else it is marked used and `issueSuccessor` stores its successor in the same
 * transaction. Refusals are returned, not thrown, so a revocation commits. No organization first:
 * the token is how it is learnt.
 */
export async function spendRefreshToken(
  db: Knex,
  tokenHash: string,
  clock: Clock,
  issueSuccessor: (trx: Knex.Transaction, session: RefreshSession, familyId: string) => Promise<string>,
): Promise<SpentRefreshToken> {
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
    if (row.used_at || row.revoked_at) {
      await trx('refresh_tokens')
        .where({ family_id: row.family_id })
        .whereNull('revoked_at')
        .update({ revoked_at: clock.now() });
      return {
        ok: false,
        reason: row.revoked_at ? 'revoked refresh token' : 'refresh token reused: family revoked',
      } as const;
    }
    if (row.expires_at.getTime() <= clock.now().getTime())
      return { ok: false, reason: 'expired refresh token' } as const;
    const user = await findUserById(trx, row.user_id);
    const access = await hasAccess(trx, row.organization_id, row.user_id);
    if (!user || user.status === 'DISABLED' || !access)
      return { ok: false, reason: 'user no longer has access' } as const;
    await trx('refresh_tokens').where({ id: row.id }).update({ used_at: clock.now() });
    const session = { userId: row.user_id, organizationId: row.organization_id };
    return { ok: true, session, refreshToken: await issueSuccessor(trx, session, row.family_id) } as const;
  });
}

import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { findLiveApiKey, insertApiKey } from '../../db/auth/api-keys';
import { type Grant, isPermission, parseGrant, Permission, Scope } from '../../domain/rbac';
import { hashSecret, randomSecret } from './secrets';

/**
 * API keys are `lsk_` followed by 256 random bits, sent as `Authorization: Bearer <key>`. The
 * prefix makes them recognizable (to callers, secret scanners and our auth middleware); only
 * their SHA-256 is stored.
 */
export const API_KEY_PREFIX = 'lsk_';

/** What a key may do unless created with explicit permissions: the internal KYC lookups. */
export const DEFAULT_KEY_PERMISSIONS = [Permission.KYC_READ];

export interface CreatedApiKey {
  id: string;
  key: string;
}

export async function createApiKey(
  db: Knex,
  options: { organizationId?: string; platform?: boolean; label?: string; permissions?: string[] },
): Promise<CreatedApiKey> {
  const platform = options.platform === true;
  if (platform === (options.organizationId !== undefined)) {
    throw new Error('an API key is either for one organization or for the platform');
  }
  const scope = platform ? Scope.PLATFORM : Scope.ORG;
  const permissions = options.permissions ?? DEFAULT_KEY_PERMISSIONS;
  const unknown = permissions.filter((name) => !isPermission(name));
  if (unknown.length > 0)
    throw new Error(`unknown permission ${unknown.join(', ')} (a key's scope follows from --org or --platform)`);
  const key = `${API_KEY_PREFIX}${randomSecret()}`;
  const id = randomUUID();
  await insertApiKey(db, options.organizationId ?? null, {
    id,
    scope,
    label: options.label ?? null,
    key_hash: hashSecret(key),
    key_hint: key.slice(0, API_KEY_PREFIX.length + 6),
    permissions: permissions.map((p) => `${p}:${scope}`),
  });
  return { id, key };
}

export interface ApiKeyRecord {
  id: string;
  organizationId: string | null;
  platform: boolean;
  grants: Grant[];
}

/** The live key with this secret, or undefined (unknown or revoked). */
export async function findApiKey(db: Knex, key: string): Promise<ApiKeyRecord | undefined> {
  const row = await findLiveApiKey(db, hashSecret(key));
  if (!row) return undefined;
  return {
    id: row.id,
    organizationId: row.organization_id,
    platform: row.scope === Scope.PLATFORM,
    grants: row.permissions.map(parseGrant).filter((g): g is Grant => g !== undefined),
  };
}

import type { Knex } from 'knex';

/** API keys, stored by their SHA-256 only; platform keys have no organization. */
export interface ApiKeyRow {
  id: string;
  organization_id: string | null;
  scope: 'ORG' | 'PLATFORM';
  label: string | null;
  key_hash: string;
  key_hint: string;
  permissions: string[];
  revoked_at: Date | null;
}

/** Stores a new key in its organization (null: a platform key). */
export async function insertApiKey(
  db: Knex,
  organizationId: string | null,
  key: Pick<ApiKeyRow, 'id' | 'scope' | 'label' | 'key_hash' | 'key_hint' | 'permissions'>,
): Promise<void> {
  await db('api_keys').insert({ ...key, organization_id: organizationId });
}

/** Revokes a live key; false when there is none. No organization: operators revoke by key id, platform keys have none. */
export async function revokeApiKey(db: Knex, id: string): Promise<boolean> {
  const updated = await db('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
  return updated > 0;
}

/** The live key with this hash. No organization first: the key is how the caller's is learnt. */
export function findLiveApiKey(
  db: Knex,
  keyHash: string,
): Promise<Pick<ApiKeyRow, 'id' | 'organization_id' | 'scope' | 'permissions'> | undefined> {
  return db('api_keys')
    .where({ key_hash: keyHash })
    .whereNull('revoked_at')
    .first<Pick<ApiKeyRow, 'id' | 'organization_id' | 'scope' | 'permissions'> | undefined>();
}

import type { JWK } from 'jose';
import type { Knex } from 'knex';

/** A trusted partner: its issuer, the key its JWTs are verified with, and what it may do. */
export interface PartnerRow {
  id: string;
  organization_id: string;
  issuer: string;
  jwks_url: string | null;
  public_jwk: JWK | null;
  permissions: string[];
  status: string;
}

/**
 * Every active partner (a few rows), read whole so an unverified issuer never reaches a query.
 * No organization: a partner's issuer is what names its organization.
 */
export function activePartners(db: Knex): Promise<PartnerRow[]> {
  return db('partners').where({ status: 'ACTIVE' }).select<PartnerRow[]>();
}

/** The active partner an access token names. No organization first: the partner is how it is learnt. */
export function findActivePartner(
  db: Knex,
  id: string,
): Promise<Pick<PartnerRow, 'organization_id' | 'permissions'> | undefined> {
  return db('partners')
    .where({ id, status: 'ACTIVE' })
    .first<Pick<PartnerRow, 'organization_id' | 'permissions'> | undefined>();
}

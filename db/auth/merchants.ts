import type { Knex } from 'knex';

// Merchants and the financing subjects' access to them (merchant_access).

/** The organization a merchant belongs to. No organization first: this is how a merchant's is learnt. */
export async function organizationOfMerchant(db: Knex, merchantId: string): Promise<string | undefined> {
  const row = await db('merchants')
    .where({ id: merchantId })
    .first<{ organization_id: string } | undefined>('organization_id');
  return row?.organization_id;
}

/**
 * Whether the issuer's subject holds `permission` on the merchant. No organization: the rows are
 * the issuer's subjects; the caller checks the merchant's organization (organizationOfMerchant).
 */
export async function merchantAccessAllows(
  db: Knex,
  issuer: string,
  subject: string,
  merchantId: string,
  permission: string,
): Promise<boolean> {
  const row = await db('merchant_access')
    .where({ issuer, subject, merchant_id: merchantId })
    .whereRaw('? = any(permissions)', [permission])
    .first('merchant_id');
  return row !== undefined;
}

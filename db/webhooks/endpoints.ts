import type { Knex } from 'knex';

/** A webhook endpoint as stored (its secrets included: only the signing step and creation read them). */
export interface WebhookEndpointRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewEndpoint = Pick<WebhookEndpointRow, 'id' | 'url' | 'description' | 'event_types' | 'enabled' | 'secret'>;

/**
 * Inserts an endpoint unless the organization holds `max` already (counted under a lock on the
 * organization's row, so concurrent creations cannot both pass); undefined when full.
 */
export async function insertEndpoint(
  db: Knex,
  organizationId: string,
  endpoint: NewEndpoint,
  max: number,
): Promise<WebhookEndpointRow | undefined> {
  return db.transaction(async (trx) => {
    await trx('organizations').where({ id: organizationId }).forUpdate().first('id');
    const held = await trx('webhook_endpoints').where({ organization_id: organizationId }).count({ count: '*' });
    if (Number(held[0]?.count ?? 0) >= max) return undefined;
    const [row] = await trx('webhook_endpoints')
      .insert({ ...endpoint, organization_id: organizationId })
      .returning<WebhookEndpointRow[]>('*');
    return row;
  });
}

export const listEndpoints = (db: Knex, organizationId: string) =>
  db('webhook_endpoints')
    .where({ organization_id: organizationId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select<WebhookEndpointRow[]>('*');

export const findEndpoint = (db: Knex | Knex.Transaction, organizationId: string, id: string) =>
  db('webhook_endpoints').where({ organization_id: organizationId, id }).first<WebhookEndpointRow | undefined>();

export type EndpointChanges = Partial<Pick<WebhookEndpointRow, 'url' | 'description' | 'event_types' | 'enabled'>>;

/** Applies changes; enabling again forgets why it was disabled and its run of failures. */
export async function updateEndpoint(
  db: Knex,
  organizationId: string,
  id: string,
  changes: EndpointChanges,
  now: Date,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db('webhook_endpoints')
    .where({ organization_id: organizationId, id })
    .update({
      ...changes,
      ...(changes.enabled === true ? { disabled_reason: null, failing_since: null } : {}),
      ...(changes.enabled === false ? { disabled_reason: 'disabled by the organization' } : {}),
      updated_at: now,
    })
    .returning<WebhookEndpointRow[]>('*');
  return row;
}

export const deleteEndpoint = async (db: Knex, organizationId: string, id: string): Promise<boolean> =>
  (await db('webhook_endpoints').where({ organization_id: organizationId, id }).delete()) > 0;

/** A new secret; the current one keeps signing (beside it) until `graceUntil`. */
export async function rotateSecret(
  db: Knex,
  organizationId: string,
  id: string,
  secret: string,
  graceUntil: Date,
  now: Date,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db('webhook_endpoints')
    .where({ organization_id: organizationId, id })
    .update({
      previous_secret: db.ref('secret'),
      previous_secret_expires_at: graceUntil,
      secret,
      updated_at: now,
    })
    .returning<WebhookEndpointRow[]>('*');
  return row;
}

/** An attempt succeeded: the endpoint's run of failures is over. */
export async function endpointAnswered(db: Knex, organizationId: string, id: string): Promise<void> {
  await db('webhook_endpoints')
    .where({ organization_id: organizationId, id })
    .whereNotNull('failing_since')
    .update({ failing_since: null });
}

/**
 * An attempt failed: the run of failures starts now unless it started before; an endpoint
 * failing since before `disableBefore` is disabled with `reason`. Answers whether it was disabled.
 */
export async function endpointFailed(
  db: Knex,
  organizationId: string,
  id: string,
  now: Date,
  disableBefore: Date,
  reason: string,
): Promise<boolean> {
  const endpoint = { organization_id: organizationId, id };
  await db('webhook_endpoints').where(endpoint).whereNull('failing_since').update({ failing_since: now });
  const disabled = await db('webhook_endpoints')
    .where({ ...endpoint, enabled: true })
    .where('failing_since', '<', disableBefore)
    .update({ enabled: false, disabled_reason: reason, updated_at: now });
  return disabled > 0;
}

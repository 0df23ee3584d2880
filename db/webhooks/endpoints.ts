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
  last_failed_at: Date | null;
  /** Failed attempts in a row; past WEBHOOK_BACKOFF_AFTER_FAILURES the endpoint backs off until backing_off_until. */
  consecutive_failures: number;
  backing_off_until: Date | null;
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
      ...(changes.enabled === true || changes.url !== undefined
        ? { failing_since: null, last_failed_at: null, consecutive_failures: 0, backing_off_until: null }
        : {}),
      ...(changes.enabled === true ? { disabled_reason: null } : {}),
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
    .where((q) => q.whereNotNull('failing_since').orWhere('consecutive_failures', '>', 0))
    .update({ failing_since: null, consecutive_failures: 0, backing_off_until: null });
}

/**
 * Whether an attempt may connect to an endpoint that may be backing off: at once when it is not
 * (no statement), never before its time, and when its time has come only as the one probe that
 * claims it (it moves the time on by `probeMs`, so the others keep waiting for the probe's
 * answer). Answers how long to wait when it may not.
 */
export async function claimAttempt(
  db: Knex,
  organizationId: string,
  endpoint: Pick<WebhookEndpointRow, 'id' | 'backing_off_until'>,
  now: Date,
  probeMs: number,
): Promise<{ waitMs: number } | undefined> {
  const until = endpoint.backing_off_until;
  if (!until) return undefined;
  if (until > now) return { waitMs: until.getTime() - now.getTime() };
  const claimed = await db('webhook_endpoints')
    .where({ organization_id: organizationId, id: endpoint.id })
    .where('backing_off_until', '<=', now)
    .update({ backing_off_until: new Date(now.getTime() + probeMs) })
    .returning('id');
  return claimed.length > 0 ? undefined : { waitMs: probeMs };
}

/**
 * An attempt failed: the endpoint's run of failures goes on, or starts now (none yet, or the last
 * failure was more than `quietMs` ago: deliveries retry at least that often, so a gap means the
 * failures were not one run); an endpoint failing for more than `disableAfterMs` is disabled with
 * the reason. One statement: a success committed meanwhile is not undone by a stale count.
 */
export async function endpointFailed(
  db: Knex,
  organizationId: string,
  id: string,
  now: Date,
  rule: {
    disableAfterMs: number;
    quietMs: number;
    reason: string;
    /** For a failure worth retrying: past `after` in a row, back off `initialMs` doubling to `maximumMs`. */
    backoff?: { after: number; initialMs: number; maximumMs: number };
  },
): Promise<void> {
  const quietSince = new Date(now.getTime() - rule.quietMs);
  const disableBefore = new Date(now.getTime() - rule.disableAfterMs);
  const backoff = rule.backoff ?? { after: 0, initialMs: 0, maximumMs: 0 };
  await db.raw(
    `update webhook_endpoints e
        set failing_since = run.since, last_failed_at = :now,
            consecutive_failures = e.consecutive_failures + :counts,
            backing_off_until = case when :counts = 1 and e.consecutive_failures + 1 >= :after
              then cast(:now as timestamptz) + make_interval(secs => least(
                :initialMs * power(2, least(30, e.consecutive_failures + 1 - :after)), :maximumMs) / 1000.0)
              else e.backing_off_until end,
            enabled = e.enabled and run.since >= :disableBefore,
            disabled_reason = case when e.enabled and run.since < :disableBefore
              then 'failing since ' || to_char(run.since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '; last: ' || :reason
              else e.disabled_reason end,
            updated_at = case when e.enabled and run.since < :disableBefore then :now else e.updated_at end
       from (select case when failing_since is null or last_failed_at < :quietSince then cast(:now as timestamptz)
                         else failing_since end as since
               from webhook_endpoints where organization_id = :organizationId and id = :id) run
      where e.organization_id = :organizationId and e.id = :id`,
    {
      now,
      disableBefore,
      quietSince,
      reason: rule.reason,
      organizationId,
      id,
      counts: rule.backoff ? 1 : 0,
      after: backoff.after,
      initialMs: backoff.initialMs,
      maximumMs: backoff.maximumMs,
    },
  );
}

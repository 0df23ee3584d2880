import type { Knex } from 'knex';
import type { OtpPurpose } from '../../domain/current-account/codes';
import { DELIVERY_STATUSES, isFinalDelivery } from '../../domain/current-account/delivery-reports';

export interface OtpSend {
  organizationId: string;
  userId: string;
  purpose: OtpPurpose | 'EMAIL_VERIFICATION';
  referenceId: string;
  channel: 'SMS' | 'EMAIL';
  destination: string;
  sentAt: Date;
}

/** The hourly limits on sends: per user, and per destination that is not the user's own. */
export interface SendLimits {
  perUser: number;
  perDestination: number;
}

/** Why a send would break a limit now, and when it frees up; undefined when within them. */
export interface OverLimit {
  retryAfterMs: number;
}

/**
 * The sends in the hour before `now` to the user, and to `foreign` destinations (numbers or
 * addresses that are not the user's own: the new number of a phone change) by anyone. A user's
 * own number is limited by the user's count only, so nobody can use up someone else's codes by
 * sending to their number.
 */
export async function overSendLimits(
  db: Knex | Knex.Transaction,
  ids: { organizationId: string; userId: string },
  foreign: string[],
  limits: SendLimits,
  now: Date,
): Promise<OverLimit | undefined> {
  const since = new Date(now.getTime() - 3_600_000);
  const windows: { count: number; oldest: Date | null; limit: number }[] = [];
  const [mine] = await db('otp_sends')
    .where({ organization_id: ids.organizationId, user_id: ids.userId })
    .where('sent_at', '>', since)
    .select(db.raw('count(*)::int as count'), db.raw('min(sent_at) as oldest'));
  windows.push({ ...(mine as { count: number; oldest: Date | null }), limit: limits.perUser });
  for (const destination of foreign) {
    const [theirs] = await db('otp_sends')
      .where({ destination })
      .where('sent_at', '>', since)
      .select(db.raw('count(*)::int as count'), db.raw('min(sent_at) as oldest'));
    windows.push({ ...(theirs as { count: number; oldest: Date | null }), limit: limits.perDestination });
  }
  const full = windows.filter((w) => w.count >= w.limit && w.oldest);
  if (full.length === 0) return undefined;
  return { retryAfterMs: Math.max(...full.map((w) => w.oldest!.getTime() + 3_600_000 - now.getTime())) };
}

/**
 * Claims a send within the limits, recorded before it goes out (a send that fails still counts:
 * retries cannot multiply texts past the limit). Serialised per user and per destination, so
 * parallel requests cannot all pass the count. Answers the send's id, or why it is over a limit.
 */
export async function claimSend(
  db: Knex,
  send: OtpSend & { own: boolean },
  limits: SendLimits,
): Promise<{ id: number } | OverLimit> {
  return db.transaction(async (trx) => {
    for (const key of [`otp-user:${send.userId}`, `otp-destination:${send.destination}`].sort())
      await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [key]);
    const over = await overSendLimits(
      trx,
      { organizationId: send.organizationId, userId: send.userId },
      send.own ? [] : [send.destination],
      limits,
      send.sentAt,
    );
    if (over) return over;
    const [row] = await trx('otp_sends')
      .insert({
        organization_id: send.organizationId,
        user_id: send.userId,
        purpose: send.purpose,
        reference_id: send.referenceId,
        channel: send.channel,
        destination: send.destination,
        sent_at: send.sentAt,
      })
      .returning('id');
    return { id: Number((row as { id: number | string }).id) };
  });
}

/** The provider's id for a claimed send, once it went out (delivery reports name it). */
export async function recordSent(db: Knex, id: number, providerMessageId: string): Promise<void> {
  await db('otp_sends').where({ id }).update({ provider_message_id: providerMessageId });
}

/** Stored statuses an interim report (Sent, Submitted, Buffered) must not replace. */
const FINAL_STORED = `delivery_status in (${DELIVERY_STATUSES.filter(isFinalDelivery)
  .map((status) => `'${status}'`)
  .join(', ')})`;

/**
 * A delivery report of the SMS gateway for a message we sent; false when no send has that id.
 * Reports may come in any order: an interim one arriving after the final one leaves it as it is.
 */
export async function recordDeliveryReport(
  db: Knex,
  report: { messageId: string; status: string; failureReason?: string },
  now: Date,
): Promise<boolean> {
  const unlessFinal = (column: string, value: string | Date | null) =>
    isFinalDelivery(report.status) ? value : db.raw(`case when ${FINAL_STORED} then ${column} else ? end`, [value]);
  const updated = await db('otp_sends')
    .where({ provider_message_id: report.messageId, channel: 'SMS' })
    .update({
      delivery_status: unlessFinal('delivery_status', report.status),
      delivery_failure_reason: unlessFinal('delivery_failure_reason', report.failureReason ?? null),
      delivery_reported_at: unlessFinal('delivery_reported_at', now),
    });
  return updated > 0;
}

import type { Knex } from 'knex';
import type { OtpPurpose } from '../../activities/current-account/codes';

export interface OtpSend {
  organizationId: string;
  userId: string;
  purpose: OtpPurpose | 'EMAIL_VERIFICATION';
  referenceId: string;
  channel: 'SMS' | 'EMAIL';
  destination: string;
  providerMessageId?: string;
  sentAt: Date;
}

/** A code or link that went out (the hourly limits count these). */
export async function recordOtpSend(db: Knex, send: OtpSend): Promise<void> {
  await db('otp_sends').insert({
    organization_id: send.organizationId,
    user_id: send.userId,
    purpose: send.purpose,
    reference_id: send.referenceId,
    channel: send.channel,
    destination: send.destination,
    provider_message_id: send.providerMessageId ?? null,
    sent_at: send.sentAt,
  });
}

/**
 * Sends in the hour before `now`, to the user and to each destination, with the oldest of each:
 * the hourly limits and, when one is reached, when it frees up.
 */
export async function sendsInLastHour(
  db: Knex,
  organizationId: string,
  userId: string,
  destinations: string[],
  now: Date,
): Promise<{ key: string; count: number; oldest: Date }[]> {
  const since = new Date(now.getTime() - 3_600_000);
  const byUser = db('otp_sends')
    .where({ organization_id: organizationId, user_id: userId })
    .where('sent_at', '>', since)
    .select(db.raw("'user' as key"), db.raw('count(*)::int as count'), db.raw('min(sent_at) as oldest'));
  const byDestination = db('otp_sends')
    .whereIn('destination', destinations)
    .where('sent_at', '>', since)
    .groupBy('destination')
    .select('destination as key', db.raw('count(*)::int as count'), db.raw('min(sent_at) as oldest'));
  const rows = (await db.unionAll([byUser, byDestination], true)) as {
    key: string;
    count: number;
    oldest: Date | null;
  }[];
  return rows.filter((r) => r.oldest !== null).map((r) => ({ key: r.key, count: r.count, oldest: r.oldest! }));
}

/** A delivery report of the SMS gateway for a message we sent; false when no send has that id. */
export async function recordDeliveryReport(
  db: Knex,
  report: { messageId: string; status: string; failureReason?: string },
  now: Date,
): Promise<boolean> {
  const updated = await db('otp_sends')
    .where({ provider_message_id: report.messageId, channel: 'SMS' })
    .update({
      delivery_status: report.status,
      delivery_failure_reason: report.failureReason ?? null,
      delivery_reported_at: now,
    });
  return updated > 0;
}

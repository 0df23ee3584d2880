import { createHmac, timingSafeEqual } from 'node:crypto';
import { ASSUMED } from './assumed';

/**
 * The identity-verification provider's request and callback signatures
 * (protocols/kyc-provider.md). Comparisons are constant-time; timestamps outside the freshness
 * window are refused, since the signature says nothing about when it was made otherwise.
 */
export const SIGNATURE_FRESHNESS_MS = ASSUMED.signatureFreshnessMs;

/**
 * base64(HMAC-SHA256(api_key, timestamp + partner_id + "sid_request")): v2 requests, answers and
 * callbacks, and v3 webhooks alike. It covers no body.
 */
export function signV2(apiKey: string, partnerId: string, timestamp: string): string {
  return createHmac('sha256', apiKey)
    .update(timestamp + partnerId + 'sid_request')
    .digest('base64');
}

export function sameSignature(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether an ISO 8601 (or epoch-seconds) timestamp is within the window of `now`. */
export function isFresh(timestamp: unknown, now: Date, windowMs = SIGNATURE_FRESHNESS_MS): boolean {
  if (typeof timestamp !== 'string' || timestamp === '') return false;
  const ms = /^\d+$/.test(timestamp) ? Number(timestamp) * 1000 : Date.parse(timestamp);
  return Number.isFinite(ms) && Math.abs(now.getTime() - ms) <= windowMs;
}

export function verifyV2(
  apiKey: string,
  partnerId: string,
  body: { signature?: unknown; timestamp?: unknown },
  now: Date,
): boolean {
  return (
    typeof body.timestamp === 'string' &&
    isFresh(body.timestamp, now) &&
    sameSignature(signV2(apiKey, partnerId, body.timestamp), body.signature)
  );
}

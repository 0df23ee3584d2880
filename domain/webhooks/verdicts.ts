/**
 * What an attempt's outcome means for its delivery (Standard Webhooks' retry guidance, as the
 * payment APIs apply it): a 2xx delivers; a 5xx, 408, 429, a timeout or a connection failure is
 * retried (a 429's or 503's Retry-After sets the next wait); any other answer (3xx, 4xx: redirects
 * are not followed) and an address the endpoint may not reach end it.
 */
export type AttemptOutcome =
  | { kind: 'answered'; status: number; retryAfter?: string }
  | { kind: 'unanswered'; error: 'timeout' | 'connection' | 'address'; detail: string };

/** Failure types of a delivery attempt that end it at once (no retry). */
export const WebhookFailure = {
  /** The receiver answered a 3xx or a 4xx other than 408 and 429. */
  REFUSED: 'WEBHOOK_REFUSED',
  /** The endpoint resolved to an address it may not reach. */
  ADDRESS_REFUSED: 'WEBHOOK_ADDRESS_REFUSED',
  /** The endpoint (or the delivery) was deleted, or is disabled. */
  ENDPOINT_UNAVAILABLE: 'WEBHOOK_ENDPOINT_UNAVAILABLE',
} as const;

export type Verdict =
  | { kind: 'delivered' }
  | { kind: 'retry'; reason: string; afterMs?: number }
  | { kind: 'give-up'; reason: string; type: typeof WebhookFailure.REFUSED | typeof WebhookFailure.ADDRESS_REFUSED };

/** The longest Retry-After honoured: a receiver cannot park a delivery past the retry window anyway. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3), in ms from `now`; undefined when unreadable. */
export function retryAfterMs(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const ms = /^\d{1,10}$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now.getTime();
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 1_000), MAX_RETRY_AFTER_MS);
}

export function verdictOf(outcome: AttemptOutcome, now: Date): Verdict {
  if (outcome.kind === 'unanswered') {
    if (outcome.error === 'address')
      return { kind: 'give-up', reason: `address refused: ${outcome.detail}`, type: WebhookFailure.ADDRESS_REFUSED };
    return { kind: 'retry', reason: `${outcome.error}: ${outcome.detail}` };
  }
  const { status } = outcome;
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  if (status >= 500 || status === 408 || status === 429) {
    const afterMs = status === 429 || status === 503 ? retryAfterMs(outcome.retryAfter, now) : undefined;
    return { kind: 'retry', reason: `answered ${status}`, ...(afterMs !== undefined ? { afterMs } : {}) };
  }
  return { kind: 'give-up', reason: `answered ${status}`, type: WebhookFailure.REFUSED };
}

/** The wait the retry policy itself puts after attempt `attempt` (1-based): doubling from the first, capped. */
export function backoffMs(retry: { initialMs: number; maximumMs: number }, attempt: number): number {
  return Math.min(retry.initialMs * 2 ** Math.max(0, attempt - 1), retry.maximumMs);
}

/** The most of a receiver's answer kept for the tenant to read, and the largest answer any of it is kept of. */
export const EXCERPT_CHARS = 200;
const EXCERPT_FROM_BYTES = 512;
/**
 * What may be a secret: a run of token characters (base64, hex, JWT, URL-encoded, escaped) of 16
 * or more, or four digits and more (a code, a PIN, an account number).
 */
const SECRET_LIKE = /[A-Za-z0-9+/_=.~%\\-]{16,}|\d{4,}/;
// Cc is C0, DEL and C1.
// eslint-disable-next-line no-control-regex -- removing control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

/**
 * What of a receiver's answer the deliveries list shows: the answer, control characters dropped,
 * when it reads as a receiver's and nothing in it may be a secret: plain text or JSON (or no
 * type), at most 512 bytes, no run that may be a token, key or code. Anything else (a page, a
 * file, an internal service's reply, a receiver echoing a credential) shows its status alone. A
 * receiver says "ok" or why it refused; whatever else answers a URL (an internal service, where
 * private targets are allowed) must not have its answer shown to the tenant that named the URL.
 */
export function receiverExcerpt(answer: { contentType?: string; body: string; size: number }): string | null {
  const type = (answer.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const textual = type === '' || type === 'text/plain' || type === 'application/json' || type.endsWith('+json');
  if (!textual || answer.size > EXCERPT_FROM_BYTES) return null;
  const text = answer.body.replace(CONTROL, ' ').trim();
  if (text === '' || SECRET_LIKE.test(text)) return null;
  const points = Array.from(text);
  return points.length > EXCERPT_CHARS ? `${points.slice(0, EXCERPT_CHARS - 1).join('')}…` : text;
}

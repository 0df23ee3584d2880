import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): a secret is `whsec_` + the
 * base64 of its key; a message is signed as HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`
 * and the header carries `v1,<base64 signature>` per secret, space-separated, so a receiver
 * rotating its secret accepts either while both are valid.
 */
export const SECRET_PREFIX = 'whsec_';

/** A new secret: 32 random bytes. */
export const newSecret = () => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three headers of a signed message, signed with every given secret. */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' '),
  };
}

import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';

/** 256 random bits, URL-safe: API keys and refresh tokens. */
export const randomSecret = () => randomBytes(32).toString('base64url');

/** SHA-256 of a high-entropy secret: what is stored and looked up instead of the secret itself. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/**
 * A key only the holder of `secret` can derive: HMAC-SHA256 keyed by the secret over a label.
 * Not its stored hash (hashSecret), so the table that holds what it seals cannot open it.
 */
const sealingKey = (secret: string, label: string) => createHmac('sha256', secret).update(label).digest();

/** `plain` sealed with AES-256-GCM under a key derived from `secret`: IV, tag and ciphertext in one buffer. */
export function sealWith(secret: string, label: string, plain: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret, label), iv);
  const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

/** What sealWith sealed, or undefined when `secret` or `label` is not the one it was sealed with. */
export function openWith(secret: string, label: string, sealed: Buffer): string | undefined {
  if (sealed.length < 28) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret, label), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

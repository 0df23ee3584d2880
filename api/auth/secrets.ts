import { createHash, randomBytes } from 'node:crypto';

/** 256 random bits, URL-safe: API keys and refresh tokens. */
export const randomSecret = () => randomBytes(32).toString('base64url');

/** SHA-256 of a high-entropy secret: what is stored and looked up instead of the secret itself. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

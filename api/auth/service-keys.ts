import { randomUUID } from 'node:crypto';
import {
  createLocalJWKSet,
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTVerifyGetKey,
} from 'jose';

/**
 * The key this service signs its own tokens with (partner access tokens, session ID tokens),
 * and the public JWKS it publishes so others, and itself, can verify them.
 */
export interface ServiceKeys {
  kid: string;
  privateKey: CryptoKey;
  /** Published at /.well-known/jwks.json. */
  jwks: { keys: JWK[] };
  /** Verifies our own tokens without any network call. */
  verifyKey: JWTVerifyGetKey;
}

/** A fresh RS256 private key as a JWK (npm start persists one; tests make their own). */
export async function generateServiceSigningKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256' };
}

export async function loadServiceKeys(privateJwkJson: string): Promise<ServiceKeys> {
  const privateJwk = JSON.parse(privateJwkJson) as JWK;
  if (privateJwk.kty !== 'RSA' || !privateJwk.d || !privateJwk.kid) {
    throw new Error('SERVICE_SIGNING_KEY must be an RSA private JWK with a kid');
  }
  const privateKey = (await importJWK(privateJwk, 'RS256')) as CryptoKey;
  const { kty, n, e, kid } = privateJwk;
  const publicJwk: JWK = { kty, n, e, kid, alg: 'RS256', use: 'sig' };
  const jwks = { keys: [publicJwk] };
  return { kid: kid!, privateKey, jwks, verifyKey: createLocalJWKSet(jwks) };
}

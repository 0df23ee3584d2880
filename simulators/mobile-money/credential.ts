import { constants, createPrivateKey, type KeyObject, privateDecrypt } from 'node:crypto';
import { selfSignedCertificate } from '../certificates';

/**
 * The simulator's side of the B2C SecurityCredential: its own certificate, made at start and
 * published to clients (they encrypt the initiator password with it, PKCS#1 v1.5), and the
 * private key that reads what they send.
 */
export interface CredentialKeys {
  /** PEM: what clients are given (GET /_control/certificate). */
  certificate: string;
  /** The initiator password a credential decrypts to, or undefined when it does not decrypt. */
  decrypt(credential: string): string | undefined;
}

export function credentialKeys(): CredentialKeys {
  const { cert, key } = selfSignedCertificate({ commonName: 'mobile-money simulator SecurityCredential' });
  const privateKey = createPrivateKey(key);
  return { certificate: cert, decrypt: (credential) => decryptPkcs1(privateKey, credential) };
}

/**
 * RSAES-PKCS1-v1_5 decryption (RFC 8017, 7.2.2). Node 20 refuses PKCS#1 v1.5 padding for
 * private decryption (CVE-2023-46809, a timing oracle), so the raw RSA operation is done with
 * no padding and the block checked here: 0x00 0x02, at least eight non-zero padding bytes, 0x00,
 * the message. The oracle does not matter to a simulator.
 */
function decryptPkcs1(privateKey: KeyObject, credential: string): string | undefined {
  const modulusBytes = (privateKey.asymmetricKeyDetails?.modulusLength ?? 0) / 8;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(credential)) return undefined;
  const encrypted = Buffer.from(credential, 'base64');
  if (encrypted.length !== modulusBytes) return undefined;
  let block: Buffer;
  try {
    block = privateDecrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, encrypted);
  } catch {
    return undefined; // e.g. a value not below the modulus
  }
  if (block.length !== modulusBytes || block[0] !== 0x00 || block[1] !== 0x02) return undefined;
  const separator = block.indexOf(0x00, 2);
  if (separator < 10) return undefined;
  return block.subarray(separator + 1).toString('utf8');
}

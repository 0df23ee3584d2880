import { constants, publicEncrypt, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Config } from '../../config';

/**
 * The B2C SecurityCredential (protocols/mobile-money.md): the initiator password RSA-encrypted
 * with the public key of the provider's X.509 certificate for the environment, PKCS#1 v1.5
 * padding (not OAEP), base64. The padding is random, so every request carries a new value and
 * none is worth storing. A wrong certificate or password is no synchronous error: the provider
 * answers the Result with 2001, so the certificate is checked here, at start-up.
 */
export function securityCredentials(certificate: string | Buffer, initiatorPassword: string): () => string {
  const publicKey = providerPublicKey(certificate);
  if (!initiatorPassword) throw new RangeError('the B2C initiator password must not be empty');
  const password = Buffer.from(initiatorPassword, 'utf8');
  return () => publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_PADDING }, password).toString('base64');
}

/** The RSA key of a certificate (PEM or DER); the error names what is wrong, never the content. */
function providerPublicKey(certificate: string | Buffer) {
  let parsed: X509Certificate;
  try {
    parsed = new X509Certificate(certificate);
  } catch {
    throw new RangeError('the mobile-money provider certificate is not an X.509 certificate (PEM or DER)');
  }
  if (parsed.publicKey.asymmetricKeyType !== 'rsa')
    throw new RangeError('the mobile-money provider certificate does not hold an RSA key');
  return parsed.publicKey;
}

type CertificateSettings = Pick<Config, 'MOBILE_MONEY_CERTIFICATE' | 'MOBILE_MONEY_CERTIFICATE_PATH'>;

/**
 * The provider's certificate as configured: a file (the `.cer` the provider publishes, PEM or
 * DER), or the PEM itself (its line breaks may be written `\n`, as .env files and secret stores
 * often hold them). Exactly one of the two.
 */
export function configuredCertificate(config: CertificateSettings): string | Buffer {
  const { MOBILE_MONEY_CERTIFICATE: pem, MOBILE_MONEY_CERTIFICATE_PATH: path } = config;
  if (pem && path) throw new Error('set MOBILE_MONEY_CERTIFICATE_PATH or MOBILE_MONEY_CERTIFICATE, not both');
  if (pem) return pem.replace(/\\n/g, '\n');
  if (!path)
    throw new Error(
      'MOBILE_MONEY_CERTIFICATE_PATH or MOBILE_MONEY_CERTIFICATE is required (npm start runs simulators)',
    );
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`MOBILE_MONEY_CERTIFICATE_PATH: cannot read ${path} (${(error as NodeJS.ErrnoException).code})`);
  }
}

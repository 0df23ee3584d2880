import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

/**
 * Self-signed X.509 certificates made at a simulator's start: the TLS certificate official SDKs
 * need (they force https), and a provider's published certificate whose key decrypts what
 * clients encrypt with it. The key pair comes from node's crypto (fast, native); node-forge only
 * writes and signs the certificate. Never used for anything but simulators.
 */
export interface SelfSignedCertificate {
  /** PEM: the certificate, which is also its own CA (trust it via NODE_EXTRA_CA_CERTS or `ca`). */
  cert: string;
  /** PEM, PKCS#8. */
  key: string;
}

export function selfSignedCertificate(options: {
  commonName: string;
  /** Subject alternative names, IP addresses or DNS names (a TLS certificate); none for a key certificate. */
  hosts?: string[];
  days?: number;
}): SelfSignedCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = forge.pki.publicKeyFromPem(publicKey);
  // A positive serial: the leading hex digit stays below 8.
  certificate.serialNumber = `1${randomBytes(8).toString('hex')}`;
  certificate.validity.notBefore = new Date(Date.now() - 60_000);
  certificate.validity.notAfter = new Date(Date.now() + (options.days ?? 30) * 86_400_000);
  const name = [{ name: 'commonName', value: options.commonName }];
  certificate.setSubject(name);
  certificate.setIssuer(name);
  const hosts = options.hosts ?? [];
  certificate.setExtensions([
    { name: 'basicConstraints', cA: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
    ...(hosts.length > 0
      ? [
          {
            name: 'subjectAltName',
            altNames: hosts.map((host) => (isIP(host) ? { type: 7, ip: host } : { type: 2, value: host })),
          },
        ]
      : []),
  ]);
  certificate.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(certificate), key: privateKey };
}

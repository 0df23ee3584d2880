import { strict as assert } from 'node:assert';
import { constants, publicEncrypt, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configuredCertificate, securityCredentials } from '../../providers/mobile-money/security-credential';
import { credentialKeys } from '../../simulators/mobile-money/credential';

/**
 * The B2C SecurityCredential (protocols/mobile-money.md): the initiator password RSA-encrypted
 * with the provider certificate's public key, PKCS#1 v1.5, base64; the certificate configured
 * as a file or as PEM; the simulator's side reading it back.
 */
describe('unit: mobile-money SecurityCredential (PKCS#1 v1.5 with the provider certificate)', () => {
  const keys = credentialKeys();

  it('encrypts with the certificate: 256 bytes under a 2048-bit key, new padding each time, decrypted by the key holder', () => {
    const credential = securityCredentials(keys.certificate, 'Safaricom999!*!');
    const [first, second] = [credential(), credential()];
    assert.equal(Buffer.from(first, 'base64').length, 256);
    assert.notEqual(first, second);
    assert.equal(keys.decrypt(first), 'Safaricom999!*!');
    assert.equal(keys.decrypt(second), 'Safaricom999!*!');
  });

  it('the simulator reads nothing from a value that is not PKCS#1 v1.5 ciphertext under its key', () => {
    const other = credentialKeys();
    const publicKey = new X509Certificate(keys.certificate).publicKey;
    const oaep = publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING }, Buffer.from('pw'));
    const cases = {
      'another certificate': securityCredentials(other.certificate, 'pw')(),
      'OAEP padding': oaep.toString('base64'),
      'the password in base64': Buffer.from('pw').toString('base64'),
      'not base64': '%%%',
      empty: '',
      'one byte short': Buffer.from(securityCredentials(keys.certificate, 'pw')(), 'base64')
        .subarray(1)
        .toString('base64'),
      'not below the modulus': Buffer.alloc(256, 0xff).toString('base64'),
    };
    for (const [what, credential] of Object.entries(cases)) assert.equal(keys.decrypt(credential), undefined, what);
  });

  it('the certificate is configured as a file (PEM or DER) or as PEM (\\n escapes allowed), exactly one of them', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mm-cert-'));
    try {
      const pemFile = path.join(dir, 'provider.cer');
      const derFile = path.join(dir, 'provider.der');
      writeFileSync(pemFile, keys.certificate);
      writeFileSync(derFile, new X509Certificate(keys.certificate).raw);
      for (const config of [
        { MOBILE_MONEY_CERTIFICATE_PATH: pemFile },
        { MOBILE_MONEY_CERTIFICATE_PATH: derFile },
        { MOBILE_MONEY_CERTIFICATE: keys.certificate },
        { MOBILE_MONEY_CERTIFICATE: keys.certificate.replace(/\n/g, '\\n') },
      ]) {
        const credential = securityCredentials(configuredCertificate(config), 'pw')();
        assert.equal(keys.decrypt(credential), 'pw', JSON.stringify(Object.keys(config)));
      }
      assert.throws(
        () =>
          configuredCertificate({ MOBILE_MONEY_CERTIFICATE_PATH: pemFile, MOBILE_MONEY_CERTIFICATE: keys.certificate }),
        /not both/,
      );
      assert.throws(() => configuredCertificate({}), /MOBILE_MONEY_CERTIFICATE_PATH or MOBILE_MONEY_CERTIFICATE/);
      assert.throws(
        () => configuredCertificate({ MOBILE_MONEY_CERTIFICATE_PATH: path.join(dir, 'missing.cer') }),
        /cannot read .* \(ENOENT\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

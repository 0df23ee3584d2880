import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { categoryOf, categoryOfV3Status } from '../../domain/kyc/result-codes';
import { verificationRules } from '../../domain/kyc/requirements';
import {
  negotiateProviderApiVersion,
  PROVIDER_API_VERSIONS,
  sentProviderApiVersions,
  versionsDifference,
} from '../../domain/kyc/provider-version';
import { isFresh, sameSignature, signV2, verifyV2 } from '../../providers/kyc/signature';

describe('spec 4.2: provider API version negotiation', () => {
  it('picks the newest listed version the server supports, in any order', () => {
    assert.equal(negotiateProviderApiVersion('v2, v3'), 'v3');
    assert.equal(negotiateProviderApiVersion('v3,v2'), 'v3');
    assert.equal(negotiateProviderApiVersion(' V3 '), 'v3');
    assert.equal(negotiateProviderApiVersion('v2'), 'v2');
    assert.equal(negotiateProviderApiVersion('v9, v3, v1'), 'v3');
  });

  it('uses v2 when the header is omitted, empty or unrecognised', () => {
    for (const header of [undefined, '', ' , ', 'v4', 'latest', 'v1,v9'])
      assert.equal(negotiateProviderApiVersion(header), 'v2', String(header));
  });

  it('the answer does not depend on order or duplicates (property)', () => {
    const token = fc.constantFrom('v2', 'v3', 'v4', 'x', '', 'V3');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 6 }), (tokens) => {
        const once = negotiateProviderApiVersion(tokens.join(','));
        assert.ok((PROVIDER_API_VERSIONS as readonly string[]).includes(once));
        assert.equal(negotiateProviderApiVersion([...tokens].reverse().concat(tokens).join(', ')), once);
      }),
    );
  });
});

describe('spec 4.2: "Sending different values to GET and POST gets the capture rejected"', () => {
  const gotGet = (header: string | undefined) => ({
    sent_api_versions: sentProviderApiVersions(header),
    negotiated_api_version: negotiateProviderApiVersion(header),
  });

  it('compares the values sent, not the version they negotiate', () => {
    assert.ok(versionsDifference(gotGet('v2'), 'v2, v9'));
    assert.ok(versionsDifference(gotGet(undefined), 'v2'));
    assert.ok(versionsDifference(gotGet('v3'), undefined));
    assert.equal(versionsDifference(gotGet(undefined), ''), undefined);
    assert.equal(versionsDifference(gotGet(' , '), undefined), undefined);
    assert.equal(versionsDifference(gotGet('v9, v2'), ' V2 ,v9,v2 '), undefined);
  });

  it('without a GET the POST negotiates on its own; a GET kept only as its negotiated version is compared by it', () => {
    assert.equal(versionsDifference({ sent_api_versions: null, negotiated_api_version: null }, 'v3'), undefined);
    const legacy = { sent_api_versions: null, negotiated_api_version: 'v3' as const };
    assert.equal(versionsDifference(legacy, 'v3, v9'), undefined);
    assert.ok(versionsDifference(legacy, 'v2'));
  });

  it('the same set in any order, spacing, case or repetition is the same values; another set is not (property)', () => {
    const token = fc.constantFrom('v2', 'v3', 'v9', 'beta', 'V3');
    const spaced = (tokens: string[]) => tokens.map((t) => ` ${t} `).join(',');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 5 }), fc.array(token, { maxLength: 5 }), (a, b) => {
        const setOf = (tokens: string[]) => [...new Set(tokens.map((t) => t.toLowerCase()))].sort().join();
        assert.equal(versionsDifference(gotGet(a.join(',')), spaced([...a].reverse().concat(a))), undefined);
        assert.equal(versionsDifference(gotGet(a.join(',')), b.join(',')) === undefined, setOf(a) === setOf(b));
      }),
    );
  });
});

describe('provider protocol: result code categories and signatures', () => {
  it('maps v2 result codes by the provider category; an unknown code is under review, never approved', () => {
    assert.equal(categoryOf('0810'), 'APPROVED');
    for (const code of ['1012', '1020', '1021']) assert.equal(categoryOf(code), 'APPROVED', code);
    assert.equal(categoryOf('1013'), 'REJECTED');
    for (const code of ['2215', '2205', '2314', '2401', '1014', '1015', '1016'])
      assert.equal(categoryOf(code), 'ERROR', code);
    for (const code of ['0811', '9999', '']) assert.equal(categoryOf(code), 'PROVISIONAL', code);
    assert.equal(categoryOf('0814'), 'PROVISIONAL');
    assert.equal(categoryOf('1022'), 'REJECTED');
    assert.equal(categoryOf('1023'), 'REJECTED');
    assert.equal(categoryOf('0907'), 'REJECTED');
    assert.equal(categoryOf('2213'), 'ERROR');
    assert.equal(categoryOf('0001'), 'ERROR');
    assert.equal(categoryOf('zzzz'), 'PROVISIONAL');
  });

  it('maps v3 statuses: clear approved, attention under review, block rejected, error an error, unknown under review', () => {
    assert.equal(categoryOfV3Status('clear'), 'APPROVED');
    assert.equal(categoryOfV3Status('attention'), 'PROVISIONAL');
    assert.equal(categoryOfV3Status('block'), 'REJECTED');
    assert.equal(categoryOfV3Status('error'), 'ERROR');
    assert.equal(categoryOfV3Status('surprise'), 'PROVISIONAL');
    for (const word of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      assert.equal(categoryOfV3Status(word), 'PROVISIONAL', word);
      assert.equal(categoryOf(word), 'PROVISIONAL', word);
    }
  });

  it('verification requirements under v3 follow the provider: 6 to 8 liveness frames, JPEG faces, consent always', () => {
    const loose = { minLiveness: 0, maxLiveness: 50, consentRequired: false };
    assert.deepEqual(verificationRules('v3', loose), {
      requiresLiveness: true,
      minLiveness: 6,
      maxLiveness: 8,
      requiresConsent: true,
      faceImageTypes: ['image/jpeg'],
    });
    assert.equal(verificationRules('v3', { ...loose, minLiveness: 7 }).minLiveness, 7, 'configuration may narrow');
    assert.deepEqual(verificationRules('v2', loose), {
      requiresLiveness: false,
      minLiveness: 0,
      maxLiveness: 50,
      requiresConsent: false,
      faceImageTypes: ['image/jpeg', 'image/png'],
    });
  });

  it('signs v2 requests as the provider does and verifies them in constant time within the window', () => {
    const now = new Date('2026-11-22T10:00:00Z');
    const timestamp = now.toISOString();
    const signature = signV2('api-key', '1234', timestamp);
    assert.equal(signature, signV2('api-key', '1234', timestamp));
    assert.ok(verifyV2('api-key', '1234', { signature, timestamp }, now));
    assert.ok(!verifyV2('other-key', '1234', { signature, timestamp }, now));
    assert.ok(!verifyV2('api-key', '1234', { signature, timestamp }, new Date(now.getTime() + 6 * 60_000)), 'stale');
    assert.ok(!sameSignature(signature, signature.slice(1)));
    assert.ok(!isFresh('not a time', now));
  });
});

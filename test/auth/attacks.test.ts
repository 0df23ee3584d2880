import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { backendToken, bearer, financingToken } from '../support/tokens';

const ROUTE = '/v1/kyc/__test__/backend';
const customer = DEMO.users.customer;
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

/** Claims of a token that would pass, for attacks that forge everything else. */
function goodClaims() {
  const { config } = harness();
  return { iss: config.AUTH_ISSUER, aud: config.AUTH_AUDIENCE, sub: customer.id, iat: now(), exp: now() + 600 };
}

async function assertRefused(token: string, why: string) {
  const reply = await call('GET', ROUTE, { headers: bearer(token) });
  assert.equal(reply.status, 401, why);
  assert.equal(reply.body.code, 'UNAUTHORISED', why);
  assert.deepEqual(reply.body.invalid_params, [], why);
  assert.equal(reply.body.description, 'Unauthorised', `${why}: no hint of the reason`);
}

describe('spec 5.4: backend bearer JWT, attack suite (each case 401 UNAUTHORISED)', () => {
  it('accepts a valid RS256 token from the identity provider (control case)', async () => {
    const reply = await call('GET', ROUTE, { headers: bearer(await backendToken(customer.id)) });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, {
      scheme: 'user',
      organization_id: customer.organization_id,
      id: `user:${customer.id}`,
    });
  });

  it('resolves an identity-provider auth id subject to our user', async () => {
    const user = DEMO.users.customerByAuthId;
    const reply = await call('GET', ROUTE, { headers: bearer(await backendToken(user.auth_id)) });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.id, `user:${user.id}`);
  });

  it('refuses a missing or non-bearer Authorization header', async () => {
    for (const headers of [{}, { Authorization: 'Basic dXNlcjpwYXNz' }, { Authorization: 'Bearer' }] as Record<
      string,
      string
    >[]) {
      const reply = await call('GET', ROUTE, { headers });
      assert.equal(reply.status, 401);
      // Credentials presented and refused name the error; none presented, only the scheme (RFC 6750).
      assert.equal(
        reply.headers.get('www-authenticate'),
        headers.Authorization ? 'Bearer error="invalid_token"' : 'Bearer',
      );
    }
  });

  it('refuses alg none', async () => {
    await assertRefused(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(goodClaims())}.`, 'alg none');
  });

  it('refuses HS256 signed with the public key', async () => {
    const jwks = (await (await fetch(harness().config.AUTH_JWKS_URL!)).json()) as { keys: { kid: string }[] };
    const publicJwk = jwks.keys.at(-1)!;
    const token = await new SignJWT(goodClaims())
      .setProtectedHeader({ alg: 'HS256', kid: publicJwk.kid })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    await assertRefused(token, 'HS256 with the public key');
  });

  it('refuses an unknown kid, and embedded jwk and jku headers carrying the attacker key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const attackerJwk = await exportJWK(publicKey);
    await assertRefused(
      await new SignJWT(goodClaims()).setProtectedHeader({ alg: 'RS256', kid: randomUUID() }).sign(privateKey),
      'unknown kid',
    );
    await assertRefused(
      await new SignJWT(goodClaims()).setProtectedHeader({ alg: 'RS256', jwk: attackerJwk }).sign(privateKey),
      'embedded jwk',
    );
    await assertRefused(
      await new SignJWT(goodClaims())
        .setProtectedHeader({ alg: 'RS256', kid: 'x', jku: 'http://127.0.0.1:1/jwks.json' })
        .sign(privateKey),
      'jku',
    );
  });

  it('refuses expired tokens, and nbf or iat in the future (beyond the clock tolerance)', async () => {
    await assertRefused(await backendToken(customer.id, {}, { expiresIn: -120 }), 'expired');
    await assertRefused(await backendToken(customer.id, { nbf: now() + 3600 }), 'nbf in the future');
    await assertRefused(await backendToken(customer.id, { iat: now() + 3600 }), 'iat in the future');
  });

  it('accepts a token issued a few seconds in the future, within the clock tolerance', async () => {
    const reply = await call('GET', ROUTE, {
      headers: bearer(await backendToken(customer.id, { iat: now() + 5, nbf: now() + 5 })),
    });
    assert.equal(reply.status, 200);
  });

  it('refuses a wrong issuer and a wrong audience', async () => {
    await assertRefused(await backendToken(customer.id, { iss: 'https://evil.example' }), 'wrong issuer');
    await assertRefused(await backendToken(customer.id, { aud: 'another-api' }), 'wrong audience');
  });

  it('refuses tokens missing exp, iat or sub', async () => {
    await assertRefused(await backendToken(customer.id, { exp: null }), 'missing exp');
    await assertRefused(await backendToken(customer.id, { iat: null }), 'missing iat');
    await assertRefused(await backendToken(null), 'missing sub');
  });

  it('refuses a tampered payload', async () => {
    const [header, , signature] = (await backendToken(customer.id)).split('.');
    const tampered = b64({ ...goodClaims(), sub: DEMO.users.platformAdmin.id });
    await assertRefused(`${header}.${tampered}.${signature}`, 'tampered payload');
  });

  it('refuses an over-size token before parsing it', async () => {
    await assertRefused(await backendToken(customer.id, { padding: 'x'.repeat(9 * 1024) }), 'over-size');
  });

  it('refuses a subject that is not one of our users', async () => {
    await assertRefused(await backendToken(randomUUID()), 'unknown uuid subject');
    await assertRefused(await backendToken('idp|nobody'), 'unknown auth id');
  });

  it('refuses a financing token on a backend route, and a backend token on a financing route', async () => {
    await assertRefused(
      await financingToken('financing', DEMO.merchant.financingSubject, {
        organization_id: DEMO.merchant.organization_id,
      }),
      'financing on backend',
    );
    const reply = await call('GET', `/v1/financing/__test__/merchants/${DEMO.merchant.id}`, {
      headers: bearer(await backendToken(customer.id)),
    });
    assert.equal(reply.status, 401);
    assert.equal(reply.body.code, 'UNAUTHORISED');
  });
});

describe('spec 5.4: JWKS rotation at the identity provider', () => {
  it('accepts a newly published key without a restart, and refuses a removed one', async function () {
    this.timeout(20_000);
    const { idp, config } = harness();
    const oldToken = await backendToken(customer.id);
    const published = await fetch(`${idp.url}/backend/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const { kid } = (await published.json()) as { kid: string };
    const newToken = await backendToken(customer.id, {}, { kid });
    assert.equal((await call('GET', ROUTE, { headers: bearer(newToken) })).status, 200, 'new key accepted');
    assert.equal((await call('GET', ROUTE, { headers: bearer(oldToken) })).status, 200, 'old key still published');

    const oldKid = JSON.parse(Buffer.from(oldToken.split('.')[0]!, 'base64url').toString()).kid as string;
    await fetch(`${idp.url}/backend/keys/${oldKid}`, { method: 'DELETE' });
    await new Promise((resolve) => setTimeout(resolve, config.AUTH_JWKS_CACHE_MAX_AGE + 200));
    await assertRefused(oldToken, 'removed key');
    assert.equal((await call('GET', ROUTE, { headers: bearer(newToken) })).status, 200, 'new key still accepted');
  });
});

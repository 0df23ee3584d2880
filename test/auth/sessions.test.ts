import { strict as assert } from 'node:assert';
import { generateKeyPair, SignJWT } from 'jose';
import { hashSecret } from '../../api/auth/secrets';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { backendToken, bearer, partnerAssertion } from '../support/tokens';

const assertPlain401 = (reply: Awaited<ReturnType<typeof call>>) => {
  assert.equal(reply.status, 401);
  assert.deepEqual(reply.body, { code: 'UNAUTHORISED', description: 'Unauthorised' });
};

describe('spec 4.1: POST /v1/auth/exchange (trusted partner)', () => {
  it('exchanges a good partner token for a service access token scoped to the partner organization', async () => {
    const reply = await call('POST', '/v1/auth/exchange', { headers: bearer(await partnerAssertion()), json: {} });
    assert.equal(reply.status, 200);
    assert.deepEqual(Object.keys(reply.body).sort(), ['access_token', 'expires_in', 'token_type']);
    assert.equal(reply.body.token_type, 'Bearer');
    assert.equal(reply.body.expires_in, 3600);
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(reply.body.access_token) });
    assert.equal(me.status, 200);
    assert.equal(me.body.scheme, 'partner');
    assert.equal(me.body.partner_id, DEMO.partner.id);
    assert.equal(me.body.organization_id, DEMO.partner.organization_id);
    assert.deepEqual(me.body.permissions, [...DEMO.partner.permissions]);
  });

  it('refuses an unknown partner', async () => {
    assertPlain401(
      await call('POST', '/v1/auth/exchange', {
        headers: bearer(await partnerAssertion({ iss: 'https://unknown-partner.test' })),
        json: {},
      }),
    );
  });

  it('refuses a partner token with a bad signature', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const { config } = harness();
    const forged = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'RS256', kid: 'forged' })
      .setIssuer(DEMO.partner.issuer)
      .setAudience(config.PARTNER_EXCHANGE_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    assertPlain401(await call('POST', '/v1/auth/exchange', { headers: bearer(forged), json: {} }));
  });

  it('refuses an expired partner token, and one for another audience', async () => {
    assertPlain401(
      await call('POST', '/v1/auth/exchange', {
        headers: bearer(await partnerAssertion({}, { expiresIn: -120 })),
        json: {},
      }),
    );
    assertPlain401(
      await call('POST', '/v1/auth/exchange', {
        headers: bearer(await partnerAssertion({ aud: 'elsewhere' })),
        json: {},
      }),
    );
  });

  it('refuses a body other than {}', async () => {
    const reply = await call('POST', '/v1/auth/exchange', {
      headers: bearer(await partnerAssertion()),
      json: { grant_type: 'x' },
    });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.code, 'BAD_REQUEST');
  });
});

describe('spec 4.1: sessions and POST /v1/auth/refresh', () => {
  const signIn = async (user = DEMO.users.customer) => {
    const reply = await call('POST', '/v1/auth/sessions', { headers: bearer(await backendToken(user.id)) });
    assert.equal(reply.status, 201);
    return reply.body as { id_token: string; refresh_token: string; expires_in: number };
  };
  const refresh = (refreshToken: unknown) =>
    call('POST', '/v1/auth/refresh', { json: { refresh_token: refreshToken } });

  it('signs in with an identity-provider token; the ID token is accepted as a backend bearer token', async () => {
    const session = await signIn();
    assert.equal(session.expires_in, 3600);
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(session.id_token) });
    assert.equal(me.status, 200);
    assert.equal(me.body.user_id, DEMO.users.customer.id);
    assert.equal((await call('GET', '/v1/kyc/__test__/backend', { headers: bearer(session.id_token) })).status, 200);
  });

  it('a session ID token cannot open more sessions', async () => {
    const session = await signIn();
    assertPlain401(await call('POST', '/v1/auth/sessions', { headers: bearer(session.id_token) }));
  });

  it('rotates: each refresh answers {id_token, refresh_token, expires_in: 3600} with a new refresh token', async () => {
    const session = await signIn();
    const first = await refresh(session.refresh_token);
    assert.equal(first.status, 200);
    assert.deepEqual(Object.keys(first.body).sort(), ['expires_in', 'id_token', 'refresh_token']);
    assert.equal(first.body.expires_in, 3600);
    assert.notEqual(first.body.refresh_token, session.refresh_token);
    assert.equal((await call('GET', '/v1/auth/whoami', { headers: bearer(first.body.id_token) })).status, 200);
    const second = await refresh(first.body.refresh_token);
    assert.equal(second.status, 200);
  });

  const familyOf = async (refreshToken: string) => {
    const { db } = harness();
    const { family_id } = await db('refresh_tokens')
      .where({ token_hash: hashSecret(refreshToken) })
      .first();
    return db('refresh_tokens').where({ family_id });
  };
  const assertRefused = (reply: Awaited<ReturnType<typeof call>>) => {
    assert.equal(reply.status, 400, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description']);
    assert.equal(reply.body.code, 'BAD_REQUEST');
    assert.equal(reply.headers.get('www-authenticate'), null);
  };

  it('spec 4.1 "Error: body with code BAD_REQUEST" and 5.8 "on 401 refresh the token": an unknown, expired, spent or revoked refresh token is 400 BAD_REQUEST in the plain shape, never 401', async () => {
    const { db, config } = harness();
    assertRefused(await refresh('not-a-token-we-issued'));
    const expired = await signIn();
    await db('refresh_tokens')
      .where({ token_hash: hashSecret(expired.refresh_token) })
      .update({ expires_at: new Date(Date.now() - 1_000) });
    assertRefused(await refresh(expired.refresh_token));
    const spent = await signIn();
    assert.equal((await refresh(spent.refresh_token)).status, 200);
    await db('refresh_tokens')
      .where({ token_hash: hashSecret(spent.refresh_token) })
      .update({ used_at: new Date(Date.now() - config.REFRESH_TOKEN_REUSE_LEEWAY - 1_000) });
    assertRefused(await refresh(spent.refresh_token));
    assertRefused(await refresh(spent.refresh_token)); // revoked by the reuse
  });

  it('a lost answer: the same refresh token sent again within REFRESH_TOKEN_REUSE_LEEWAY, its successor unused, answers the same pair, and the session lives on', async () => {
    const session = await signIn();
    const first = await refresh(session.refresh_token);
    assert.equal(first.status, 200);
    const again = await refresh(session.refresh_token);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.refresh_token, first.body.refresh_token);
    assert.equal(again.body.id_token, first.body.id_token);
    assert.ok(again.body.expires_in <= first.body.expires_in && again.body.expires_in > first.body.expires_in - 60);
    assert.ok((await familyOf(session.refresh_token)).every((row) => row.revoked_at === null));
    assert.equal((await call('GET', '/v1/auth/whoami', { headers: bearer(again.body.id_token) })).status, 200);
    const next = await refresh(again.body.refresh_token);
    assert.equal(next.status, 200, next.text);
  });

  it('the answer kept for a lost one is sealed (the table holds neither the ID token nor the successor) and forgotten once the successor is spent', async () => {
    const session = await signIn();
    const first = await refresh(session.refresh_token);
    const [spent] = (await familyOf(session.refresh_token)).filter(
      (row) => row.token_hash === hashSecret(session.refresh_token),
    );
    const stored = Buffer.from(spent.successor_answer).toString('latin1');
    assert.ok(stored.length > 28);
    for (const secret of [first.body.refresh_token, first.body.id_token, first.body.id_token.split('.')[1]])
      assert.ok(!stored.includes(secret), 'nothing readable of the answer');
    // Once the successor is spent in turn, the answer can no longer be asked for, and is gone.
    assert.equal((await refresh(first.body.refresh_token)).status, 200);
    const after = await harness()
      .db('refresh_tokens')
      .where({ token_hash: hashSecret(session.refresh_token) })
      .first('successor_answer');
    assert.equal(after.successor_answer, null);
  });

  it('reuse of a spent refresh token once its successor was used revokes the whole family', async () => {
    const session = await signIn();
    const next = await refresh(session.refresh_token);
    assert.equal(next.status, 200);
    const third = await refresh(next.body.refresh_token);
    assert.equal(third.status, 200);
    assertRefused(await refresh(session.refresh_token)); // replayed after the session moved on: theft assumed
    assertRefused(await refresh(third.body.refresh_token)); // the legitimate newest is revoked too
    const family = await familyOf(session.refresh_token);
    assert.equal(family.length, 3);
    assert.ok(
      family.every((row) => row.revoked_at !== null),
      'every token of the family is revoked',
    );
  });

  it('two concurrent refreshes with one token: one rotation, and both answer its pair', async () => {
    const session = await signIn();
    const replies = await Promise.all([refresh(session.refresh_token), refresh(session.refresh_token)]);
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200],
    );
    assert.equal(replies[0]!.body.refresh_token, replies[1]!.body.refresh_token);
    assert.equal((await familyOf(session.refresh_token)).length, 2);
  });

  it('stores refresh tokens only hashed', async () => {
    const session = await signIn();
    const found = await harness().db('refresh_tokens').where({ token_hash: session.refresh_token }).first();
    assert.equal(found, undefined);
  });

  it('answers malformed bodies with BAD_REQUEST', async () => {
    for (const json of [{}, { refresh_token: 42 }, { refresh_token: '' }, { refresh_token: 'x', extra: true }]) {
      const reply = await call('POST', '/v1/auth/refresh', { json });
      assert.equal(reply.status, 400, JSON.stringify(json));
      assert.equal(reply.body.code, 'BAD_REQUEST');
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description']);
    }
    const notJson = await call('POST', '/v1/auth/refresh', { raw: 'refresh_token=x', contentType: 'text/plain' });
    assert.equal(notJson.status, 415);
    const broken = await call('POST', '/v1/auth/refresh', {
      raw: '{"refresh_token":',
      contentType: 'application/json',
    });
    assert.equal(broken.status, 400);
    assert.equal(broken.body.code, 'BAD_REQUEST');
  });

  it('publishes the service JWKS that verifies its tokens', async () => {
    const reply = await call('GET', '/.well-known/jwks.json');
    assert.equal(reply.status, 200);
    assert.equal(reply.body.keys.length, 1);
    assert.equal(reply.body.keys[0].d, undefined, 'no private part');
    assert.equal(reply.body.keys[0].kid, harness().deps.serviceKeys.kid);
  });
});

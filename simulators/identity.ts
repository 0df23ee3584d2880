import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { controlRouter, SimulatorTimers, startSimulatorServer } from './server';

/**
 * Development identity provider: a real HTTP server that publishes JWKS and signs RS256 tokens,
 * standing in for the identity provider (backend scheme), the financing issuers, and a trusted
 * partner. It signs the claims it is asked for: it binds to 127.0.0.1 and never runs in
 * production, where the JWKS URLs point at the real providers.
 *
 * Realms (one issuer and key set each):
 *   backend           the identity provider of the backend bearer scheme
 *   financing         a financing issuer whose merchant access lives in our database
 *   financing-http    a financing issuer whose merchant access is answered over HTTP (below)
 *   partner           the demo partner signing its exchange JWTs
 *
 *   GET  /{realm}/.well-known/jwks.json        public keys
 *   POST /{realm}/tokens  {claims, expires_in?, kid?}   → {token}   (claims override iss/iat/exp; null drops one)
 *   POST /{realm}/keys    {retire_others?}      → {kid}   rotation: publish a new signing key
 *   DELETE /{realm}/keys/{kid}                  unpublish a key
 *   GET  /resource-access?issuer&subject&merchant_id&permission → {allowed}
 *   PUT  /resource-access/grants  {issuer, subject, merchant_id, permissions}
 */
export const REALMS = ['backend', 'financing', 'financing-http', 'partner'] as const;
export type Realm = (typeof REALMS)[number];

interface RealmKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

export interface IdentityProviderOptions {
  port?: number;
  /** Persist signing keys here so tokens outlive a restart (npm start); in memory otherwise. */
  keysFile?: string;
  /** The `iss` of partner tokens (the demo partner's registered issuer). */
  partnerIssuer?: string;
}

export interface RunningIdentityProvider {
  url: string;
  issuer(realm: Realm): string;
  jwksUrl(realm: Realm): string;
  close(): Promise<void>;
}

async function newKey(): Promise<RealmKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  return {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  };
}

export async function startIdentityProvider(options: IdentityProviderOptions = {}): Promise<RunningIdentityProvider> {
  let keys: Record<Realm, RealmKey[]>;
  const saved = options.keysFile ? await readFile(options.keysFile, 'utf8').catch(() => undefined) : undefined;
  if (saved) keys = JSON.parse(saved) as Record<Realm, RealmKey[]>;
  else {
    keys = {} as Record<Realm, RealmKey[]>;
    for (const realm of REALMS) keys[realm] = [await newKey()];
  }
  const persist = async () => {
    if (options.keysFile) await writeFile(options.keysFile, JSON.stringify(keys), { mode: 0o600 });
  };
  await persist();

  const grants: { issuer: string; subject: string; merchant_id: string; permissions: string[] }[] = [];
  let baseUrl = '';
  const issuer = (realm: Realm) =>
    realm === 'partner' && options.partnerIssuer ? options.partnerIssuer : `${baseUrl}/${realm}`;
  const realmOf = (name: string | undefined): Realm => {
    if (!REALMS.includes(name as Realm))
      throw Object.assign(new Error(`unknown realm ${name}`), { status: 404, expose: true });
    return name as Realm;
  };

  const router = new Router();
  router.get('/:realm/.well-known/jwks.json', (ctx) => {
    ctx.body = { keys: keys[realmOf(ctx.params.realm)].map((k) => k.publicJwk) };
  });
  router.post('/:realm/tokens', async (ctx) => {
    const realm = realmOf(ctx.params.realm);
    const body = ctx.request.body as { claims?: Record<string, unknown>; expires_in?: number; kid?: string };
    const key = body.kid ? keys[realm].find((k) => k.kid === body.kid) : keys[realm].at(-1);
    if (!key) return ctx.throw(404, 'no such key');
    const now = Math.floor(Date.now() / 1000);
    // Defaults first, then the requested claims; a claim given as null is left out (to test
    // tokens missing a required claim).
    const payload: Record<string, unknown> = {
      iss: issuer(realm),
      iat: now,
      exp: now + (body.expires_in ?? 3600),
      jti: randomUUID(),
      ...body.claims,
    };
    for (const [name, value] of Object.entries(payload)) if (value === null) delete payload[name];
    const token = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .sign(await importJWK(key.privateJwk, 'RS256'));
    ctx.body = { token };
  });
  router.post('/:realm/keys', async (ctx) => {
    const realm = realmOf(ctx.params.realm);
    const key = await newKey();
    const retire = (ctx.request.body as { retire_others?: boolean }).retire_others === true;
    keys[realm] = retire ? [key] : [...keys[realm], key];
    await persist();
    ctx.status = 201;
    ctx.body = { kid: key.kid };
  });
  router.delete('/:realm/keys/:kid', async (ctx) => {
    const realm = realmOf(ctx.params.realm);
    keys[realm] = keys[realm].filter((k) => k.kid !== ctx.params.kid);
    await persist();
    ctx.status = 204;
  });
  router.get('/resource-access', (ctx) => {
    const q = ctx.query as Record<string, string | undefined>;
    const allowed = grants.some(
      (g) =>
        g.issuer === q.issuer &&
        g.subject === q.subject &&
        g.merchant_id === q.merchant_id &&
        g.permissions.includes(q.permission ?? ''),
    );
    ctx.body = { allowed };
  });
  router.put('/resource-access/grants', (ctx) => {
    const grant = ctx.request.body as (typeof grants)[number];
    const index = grants.findIndex(
      (g) => g.issuer === grant.issuer && g.subject === grant.subject && g.merchant_id === grant.merchant_id,
    );
    if (index >= 0) grants.splice(index, 1);
    grants.push(grant);
    ctx.status = 204;
  });

  // Its token and grant routes are its API; it has no fault modes or control API of its own.
  const server = await startSimulatorServer({
    port: options.port,
    timers: new SimulatorTimers(),
    before: [],
    bodyParser: bodyParser({ enableTypes: ['json'] }),
    control: controlRouter(),
    api: router,
  });
  baseUrl = server.url;
  return {
    url: baseUrl,
    issuer,
    jwksUrl: (realm) => `${baseUrl}/${realm}/.well-known/jwks.json`,
    close: () => server.close(),
  };
}

/** Asks a running development identity provider for a signed token. */
export async function requestToken(
  idpUrl: string,
  realm: Realm,
  claims: Record<string, unknown>,
  options: { expiresIn?: number; kid?: string } = {},
): Promise<string> {
  const response = await fetch(`${idpUrl}/${realm}/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ claims, expires_in: options.expiresIn, kid: options.kid }),
  });
  if (!response.ok) throw new Error(`identity provider answered ${response.status} for a ${realm} token`);
  return ((await response.json()) as { token: string }).token;
}

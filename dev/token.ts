import { DEMO } from '../db/seeds/demo';
import { type Realm, requestToken } from '../simulators/identity';
import type { DevConfig } from './config';
import { findUserByEmail } from '../db/auth/users';
import { isUuid } from '../domain/identifiers';
import { cliDatabase, parseOptions, runCli } from './cli';

const USAGE = `usage: npm run --silent token -- --user <user id or e-mail> [--org <organization id>]
         [--permission <name>:<ORG|PLATFORM> ...] [--issuer backend|financing|financing-http|partner]
         [--merchant <merchant id>] [--expires-in <seconds>]
Prints one bearer token, signed by the development identity provider of a running npm start
(DEV_IDP_PORT). Backend tokens carry the user's auth id (or id) as sub; their permissions come
from the user's roles. Financing tokens carry --permission grants; --merchant makes the token
the merchant's seeded financing subject. --issuer partner signs the demo partner's exchange JWT.`;

const seededUser = (given: string) =>
  Object.values(DEMO.users).find((u) => u.id === given || u.email.toLowerCase() === given.toLowerCase());

/** A user created in the database (npm run user -- create), by e-mail. */
async function storedUser(config: DevConfig, email: string) {
  const db = cliDatabase(config);
  try {
    return await findUserByEmail(db, email);
  } finally {
    await db.destroy();
  }
}

/** `npm run --silent token`: a bearer token for scripts, on stdout and nothing else. */
runCli(async (config) => {
  const { values } = parseOptions(
    {
      user: { type: 'string' },
      org: { type: 'string' },
      permission: { type: 'string', multiple: true },
      issuer: { type: 'string', default: 'backend' },
      merchant: { type: 'string' },
      'expires-in': { type: 'string' },
    },
    USAGE,
  );
  const realm = values.issuer as Realm;
  if (!['backend', 'financing', 'financing-http', 'partner'].includes(realm))
    throw new Error(`unknown --issuer ${realm}\n${USAGE}`);
  const idpUrl = `http://127.0.0.1:${config.DEV_IDP_PORT}`;
  const expiresIn = values['expires-in'] ? Number(values['expires-in']) : undefined;
  const claims: Record<string, unknown> = {};

  if (realm === 'partner') {
    Object.assign(claims, { sub: DEMO.partner.id, aud: config.PARTNER_EXCHANGE_AUDIENCE });
  } else if (realm === 'backend') {
    const given = values.user ?? DEMO.users.customer.email;
    // A seeded user, a user created with `npm run user -- create` (by e-mail), or a user id.
    const user = seededUser(given) ?? (given.includes('@') ? await storedUser(config, given) : undefined);
    if (!user && !isUuid(given)) throw new Error(`no user ${given}; pass a user id or e-mail\n${USAGE}`);
    Object.assign(claims, { sub: user?.auth_id ?? user?.id ?? given, aud: config.AUTH_AUDIENCE });
    if (values.org) claims.organization_id = values.org;
  } else {
    const merchant =
      values.merchant === undefined ? undefined : values.merchant === DEMO.merchant.id ? DEMO.merchant : undefined;
    if (values.merchant !== undefined && !merchant) throw new Error(`no seeded merchant ${values.merchant}`);
    Object.assign(claims, {
      sub: merchant?.financingSubject ?? values.user ?? DEMO.merchant.financingSubject,
      aud: config.FINANCING_AUDIENCE,
      organization_id: values.org ?? merchant?.organization_id ?? DEMO.merchant.organization_id,
      permissions: values.permission ?? ['financing.read:ORG', 'financing.write:ORG'],
    });
  }
  process.stdout.write(`${await requestToken(idpUrl, realm, claims, { expiresIn })}\n`);
});

import { randomInt, randomUUID } from 'node:crypto';
import { openCustomerAccounts } from '../db/accounts/accounts';
import { organizationExists } from '../db/auth/organizations';
import { createUser } from '../db/auth/users';
import { DEMO } from '../db/seeds/demo';
import { isKenyanMobile } from '../domain/identifiers';
import { ROLE_GRANTS, type Role } from '../domain/rbac';
import { cliDatabase, parseOptions, runCli } from './cli';

const USAGE = `usage: npm run --silent user -- create [--org <organization id>] [--role <role>] [--phone <+254...>] [--status ACTIVE|WAITING_LIST]
Creates a user in the database of a running npm start (or DATABASE_URL) and prints it as one JSON
object. A customer gets a current and a credit account. Defaults: the demo organization, CUSTOMER,
a fresh +2547... number ending in 0 (the mobile-money simulator pays it), ACTIVE.
Then: npm run --silent token -- --user <its e-mail>. Roles: ${Object.keys(ROLE_GRANTS).join(', ')}.`;

/** `npm run --silent user -- create`: a fresh user for client developers and black-box tests. */
runCli(async (config) => {
  const { values, positionals } = parseOptions(
    {
      org: { type: 'string', default: DEMO.organizations.demo.id },
      role: { type: 'string', default: 'CUSTOMER' },
      phone: { type: 'string' },
      status: { type: 'string', default: 'ACTIVE' },
    },
    USAGE,
  );
  if (positionals[0] !== 'create') throw new Error(USAGE);
  const role = values.role as Role;
  if (!(role in ROLE_GRANTS)) throw new Error(`unknown role ${values.role}\n${USAGE}`);
  const status = values.status as 'ACTIVE' | 'WAITING_LIST';
  if (status !== 'ACTIVE' && status !== 'WAITING_LIST') throw new Error(`--status is ACTIVE or WAITING_LIST\n${USAGE}`);
  const phone = values.phone ?? `+2547${String(randomInt(0, 10_000_000)).padStart(7, '0')}0`;
  if (!isKenyanMobile(phone)) throw new Error(`--phone must be +2547XXXXXXXX or +2541XXXXXXXX\n${USAGE}`);
  const db = cliDatabase(config);
  try {
    const organizationId = values.org;
    if (!(await organizationExists(db, organizationId))) throw new Error(`no organization ${organizationId}`);
    const id = randomUUID();
    const email = `${role.toLowerCase()}-${id.slice(0, 8)}@${organizationId}.test`;
    const accounts = await db.transaction(async (trx) => {
      await createUser(trx, organizationId, {
        id,
        email,
        name: `Dev ${role.toLowerCase()} ${id.slice(0, 8)}`,
        phone,
        status,
        roles: [role],
      });
      return role === 'CUSTOMER' ? openCustomerAccounts(trx, organizationId, id) : undefined;
    });
    process.stdout.write(
      `${JSON.stringify({ id, email, phone, organization_id: organizationId, roles: [role], status, accounts: accounts ?? null })}\n`,
    );
  } finally {
    await db.destroy();
  }
});

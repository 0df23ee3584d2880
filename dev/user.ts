import { randomInt, randomUUID } from 'node:crypto';
import { accountStatuses, signUpCustomer } from '../db/accounts/accounts';
import { organizationExists } from '../db/auth/organizations';
import { createUser } from '../db/auth/users';
import { findLatestApplication } from '../db/kyc/applications';
import { DEMO } from '../db/seeds/demo';
import { isKenyanMobile } from '../domain/identifiers';
import { ROLE_GRANTS, type Role } from '../domain/rbac';
import { requestToken } from '../simulators/identity';
import { cliDatabase, parseOptions, runCli } from './cli';
import { reachStage, type Stage, STAGES } from './customer-stages';

const USAGE = `usage: npm run --silent user -- create [--org <organization id>] [--role <role>] [--phone <+254...>]
         [--status ACTIVE|WAITING_LIST] [--stage ${STAGES.join('|')}]
Creates a user in the database of a running npm start (or DATABASE_URL) and prints it as one JSON
object. A customer signs up with a current account PENDING_ACTIVATION and a credit account; then
--stage takes them on through the service's API as a client app would: kyc-approved submits a
server_upload verification and waits for the identity simulator's verdict; active also activates
the current account (the code read from the SMS simulator) and waits for the bank. Defaults: the
demo organization, CUSTOMER, a fresh +2547... number ending in 0 (the mobile-money simulator pays
it), ACTIVE, stage new. Then: npm run --silent token -- --user <its e-mail>.
Roles: ${Object.keys(ROLE_GRANTS).join(', ')}.`;

/** `npm run --silent user -- create`: a fresh user for client developers and black-box tests. */
runCli(async (config) => {
  const { values, positionals } = parseOptions(
    {
      org: { type: 'string', default: DEMO.organizations.demo.id },
      role: { type: 'string', default: 'CUSTOMER' },
      phone: { type: 'string' },
      status: { type: 'string', default: 'ACTIVE' },
      stage: { type: 'string', default: 'new' },
    },
    USAGE,
  );
  if (positionals[0] !== 'create') throw new Error(USAGE);
  const role = values.role as Role;
  if (!(role in ROLE_GRANTS)) throw new Error(`unknown role ${values.role}\n${USAGE}`);
  const status = values.status as 'ACTIVE' | 'WAITING_LIST';
  if (status !== 'ACTIVE' && status !== 'WAITING_LIST') throw new Error(`--status is ACTIVE or WAITING_LIST\n${USAGE}`);
  const stage = values.stage as Stage;
  if (!STAGES.includes(stage)) throw new Error(`--stage is ${STAGES.join(', ')}\n${USAGE}`);
  if (stage !== 'new' && (role !== 'CUSTOMER' || status !== 'ACTIVE'))
    throw new Error(`--stage ${stage} is for an ACTIVE CUSTOMER (a waiting list user cannot be verified)\n${USAGE}`);
  const phone = values.phone ?? `+2547${String(randomInt(0, 10_000_000)).padStart(7, '0')}0`;
  if (!isKenyanMobile(phone)) throw new Error(`--phone must be +2547XXXXXXXX or +2541XXXXXXXX\n${USAGE}`);
  const db = cliDatabase(config);
  try {
    const organizationId = values.org;
    if (!(await organizationExists(db, organizationId))) throw new Error(`no organization ${organizationId}`);
    const id = randomUUID();
    const email = `${role.toLowerCase()}-${id.slice(0, 8)}@${organizationId}.test`;
    // Letters only, as a bank takes a name: the id's first hex digits spelt as letters.
    const surname = id.slice(0, 8).replace(/\d/g, (d) => 'ghijklmnop'[Number(d)]!);
    const profile = { id, email, name: `Dev ${role.toLowerCase()} ${surname}`, phone, status };
    // A customer signs up with their accounts; any other role is a user alone.
    const accounts =
      role === 'CUSTOMER'
        ? await signUpCustomer(db, organizationId, profile)
        : await db
            .transaction((trx) => createUser(trx, organizationId, { ...profile, roles: [role] }))
            .then(() => null);
    if (stage !== 'new') {
      const token = await requestToken(`http://127.0.0.1:${config.DEV_IDP_PORT}`, 'backend', {
        sub: id,
        aud: config.AUTH_AUDIENCE,
      });
      const apiUrl = config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`;
      const smsUrl = config.SMS_PROVIDER_URL ?? `http://127.0.0.1:${config.SMS_SIMULATOR_PORT}`;
      await reachStage({ apiUrl, smsUrl, token }, { phone }, stage).catch((error: unknown) => {
        throw new Error(`${email} (${id}) signed up, but did not reach ${stage}: ${String(error)}`);
      });
    }
    process.stdout.write(
      `${JSON.stringify({
        id,
        email,
        phone,
        organization_id: organizationId,
        roles: [role],
        status,
        accounts,
        kyc_status: (await findLatestApplication(db, organizationId, id))?.status ?? null,
        account_statuses: accounts ? await accountStatuses(db, organizationId, id) : null,
      })}\n`,
    );
  } finally {
    await db.destroy();
  }
});

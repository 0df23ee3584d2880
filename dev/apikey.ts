import { createApiKey } from '../api/auth/api-keys';
import { revokeApiKey } from '../db/auth/api-keys';
import { organizationExists } from '../db/auth/organizations';
import { cliDatabase, parseOptions, runCli } from './cli';

const USAGE = `usage: npm run --silent apikey -- create (--org <organization id> | --platform) [--label <text>] [--permission <name> ...]
       npm run --silent apikey -- revoke <key id>
create prints only the key (stored hashed: it cannot be shown again) and its id on stderr;
revoke stops a key at once (API instances notice within AUTH_CALLER_CACHE_TTL).`;

/** `npm run --silent apikey`: create and revoke API keys against DATABASE_URL (or a running npm start). */
runCli(async (config) => {
  const { values, positionals } = parseOptions(
    {
      org: { type: 'string' },
      platform: { type: 'boolean' },
      label: { type: 'string' },
      permission: { type: 'string', multiple: true },
    },
    USAGE,
  );
  const [command, id] = positionals;
  const db = cliDatabase(config);
  try {
    if (command === 'create') {
      if (Boolean(values.org) === Boolean(values.platform))
        throw new Error(`give exactly one of --org and --platform\n${USAGE}`);
      if (values.org && !(await organizationExists(db, values.org))) throw new Error(`no organization ${values.org}`);
      const created = await createApiKey(db, {
        organizationId: values.org,
        platform: values.platform,
        label: values.label,
        permissions: values.permission,
      });
      console.error(`key id ${created.id}`);
      process.stdout.write(`${created.key}\n`);
    } else if (command === 'revoke' && id) {
      if (!(await revokeApiKey(db, id))) throw new Error(`no live key ${id}`);
      console.error(`revoked ${id}`);
    } else {
      throw new Error(USAGE);
    }
  } finally {
    await db.destroy();
  }
});

import type { Knex } from 'knex';
import { accountStatuses } from '../db/accounts/accounts';
import { findProvisionedSubject } from '../db/kyc/provisioned';
import { DEMO } from '../db/seeds/demo';
import { activateCurrentAccount, approveKyc, type StageClient } from './customer-stages';

/**
 * Takes the demo customers to their stages (DEMO.customerStages) through the API, once: a
 * customer already there (an earlier npm start took them) is left as is. The KYC and bank
 * simulators are in memory, so only what Postgres says counts.
 */
export async function stageDemoCustomers(
  db: Knex,
  client: Omit<StageClient, 'token'> & { tokenFor: (subject: string) => Promise<string> },
): Promise<void> {
  for (const [key, target] of Object.entries(DEMO.customerStages)) {
    if (target.stage === 'new') continue;
    const user = DEMO.users[key as keyof typeof DEMO.customerStages];
    const stageClient = { ...client, token: await client.tokenFor(user.auth_id ?? user.id) };
    const options = { idNumber: target.idNumber, dateOfBirth: target.dateOfBirth };
    const provisioned = !('missing' in (await findProvisionedSubject(db, user.organization_id, user.id)));
    if (!provisioned) await approveKyc(stageClient, options);
    if (target.stage !== 'active') continue;
    if ((await accountStatuses(db, user.organization_id, user.id)).current !== 'ACTIVE')
      await activateCurrentAccount(stageClient, user.phone_number!, options);
  }
}

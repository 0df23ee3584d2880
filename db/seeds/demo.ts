import type { Knex } from 'knex';

/**
 * Demo data with stable ids, so a client developer can call the service in minutes. Applied on
 * every `npm start`; idempotent (existing rows are left as they are).
 */
export const DEMO = {
  organizations: {
    demo: { id: 'org-demo-lender', name: 'Demo Lender' },
    other: { id: 'org-second-lender', name: 'Second Lender' },
  },
} as const;

export async function seedDemoData(db: Knex): Promise<void> {
  await db('organizations').insert(Object.values(DEMO.organizations)).onConflict('id').ignore();
}

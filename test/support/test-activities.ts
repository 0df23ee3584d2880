import type { Knex } from 'knex';

/** Activities that only the test-only workflows use. */
export function createTestActivities(db: Knex) {
  return {
    async countOrganizations(): Promise<number> {
      const [row] = await db('organizations').count<{ count: string }[]>({ count: '*' });
      return Number(row?.count ?? 0);
    },
  };
}
export type TestActivities = ReturnType<typeof createTestActivities>;

import type { Knex } from 'knex';
import pg from 'pg';
import type { KycStatusRow } from './kyc';

/**
 * Reads on the hottest paths (clients polling GET status), through pg directly with named
 * prepared statements: knex's query building and pool bookkeeping cost about as much CPU as
 * the query itself there. Same database and credentials as the knex instance; its own small pool.
 */
export function createHotReads(db: Knex, max: number) {
  const { connectionString } = (db.client.config as { connection: { connectionString: string } }).connection;
  const pool = new pg.Pool({ connectionString, max, application_name: 'lending-service-hot-reads' });
  pool.on('error', () => {}); // an idle client dropped by the server is replaced on next use

  return {
    async kycApplicationStatus(organizationId: string, id: string): Promise<KycStatusRow | undefined> {
      const { rows } = await pool.query<KycStatusRow>({
        name: 'kyc-application-status',
        text: `select id, user_id, status, needs_review, resubmission_count, reapply_blocked_until, submitted_at, provider_checked_at
                 from kyc_applications where organization_id = $1 and id = $2`,
        values: [organizationId, id],
      });
      return rows[0];
    },
    close: () => pool.end(),
  };
}
export type HotReads = ReturnType<typeof createHotReads>;

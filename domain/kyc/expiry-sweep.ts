/**
 * What an expiry sweep of one organization counts and reports (spec 2, "Expiry sweep result").
 * The workflow adds the counts up, the database keeps the last result with the organization's
 * sweep lease, and the API answers it; it lives in domain/ so that each of them can import it.
 */

/** What an expiry sweep counted (spec 2, Expiry sweep result). */
export interface SweepCounts {
  scanned: number;
  expired: number;
  completed: number;
  still_pending: number;
  failed: number;
}
export const NO_COUNTS: SweepCounts = { scanned: 0, expired: 0, completed: 0, still_pending: 0, failed: 0 };

/** The expiry sweep result resource (spec 2). */
export interface SweepResult {
  job: 'KYC_STALE_SESSION_EXPIRY';
  organization_id: string;
  started_at: string;
  finished_at: string;
  result: SweepCounts;
}

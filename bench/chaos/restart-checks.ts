import { WorkflowNotFoundError } from '@temporalio/client';
import type { Knex } from '../../db/knex';
import { STATUS_LISTENER_NAME } from '../../db/kyc/hot-reads';
import { workflowIds } from '../../workflows/ids';
import type { MoneyMovementResult } from '../../workflows/mobile-money/messages';
import { metricsOf } from '../lib';
import type { ChaosDeployment } from './deployment';
import { sleep } from './random';
import type { ReadinessPoll } from './restart-load';

/** What the restarts suite measures after an outage, and checks once the flow has settled. */

/** After its return, a dependency's recovery (ready, a push through, LISTEN again) is awaited this long. */
export const RECOVERY_DEADLINE_MS = 120_000;

/** Ms from `backAt` to the first /readyz 200 asked after it; undefined when none within the deadline. */
export async function readyAfter(polls: ReadinessPoll[], backAt: number): Promise<number | undefined> {
  while (Date.now() - backAt < RECOVERY_DEADLINE_MS) {
    const ready = polls.find((p) => p.sentAt >= backAt && p.status === 200);
    if (ready) return ready.answeredAt - backAt;
    await sleep(100);
  }
  return undefined;
}

/** Ms from `backAt` to the first 200 of `apiUrl`'s own /readyz (one instance, not the proxy); undefined when none within the deadline. */
export async function instanceReadyAfter(apiUrl: string, backAt: number): Promise<number | undefined> {
  while (Date.now() - backAt < RECOVERY_DEADLINE_MS) {
    const status = await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
      async (response) => (await response.arrayBuffer(), response.status),
      () => 0,
    );
    if (status === 200) return Date.now() - backAt;
    await sleep(100);
  }
  return undefined;
}

/** Ms from `backAt` until the API's status-change listener is connected and listening again. */
export async function listenerAfter(db: Knex, backAt: number): Promise<number | undefined> {
  while (Date.now() - backAt < RECOVERY_DEADLINE_MS) {
    const listening = await db
      .raw<{ rows: { n: number }[] }>(
        `select count(*)::int as n from pg_stat_activity
          where datname = current_database() and application_name = ? and query ilike 'listen %'`,
        [STATUS_LISTENER_NAME],
      )
      .then(({ rows }) => rows[0]!.n > 0)
      .catch(() => false); // the suite's own pool reconnecting
    if (listening) return Date.now() - backAt;
    await sleep(200);
  }
  return undefined;
}

/**
 * Answers in the 5xx range other than 503 the API instances gave on any route over the run (the
 * provider callbacks the simulators sent included), from their Prometheus counters (an instance
 * killed and started again counts from its start).
 */
export async function serverErrors(apiUrls: string[]): Promise<number> {
  const text = await metricsOf(apiUrls);
  return [...text.matchAll(/^http_requests_total\{[^}]*status="(5\d\d)"[^}]*\} (\d+)/gm)]
    .filter(([, status]) => status !== '503')
    .reduce((sum, [, , n]) => sum + Number(n), 0);
}

/**
 * Stored transactions whose status is not what their run ended with: no run, a run still going
 * or ended otherwise than completing, or one that completed with another status.
 */
export async function outcomeMismatches(deployment: ChaosDeployment, ids: string[]): Promise<number> {
  const rows = (await deployment.db('transactions').whereIn('id', ids).select('id', 'status')) as {
    id: string;
    status: string;
  }[];
  let mismatches = 0;
  for (const row of rows) {
    const handle = deployment.temporal.workflow.getHandle(workflowIds.stkPush(row.id));
    try {
      const run = await handle.describe();
      const ended = run.status.name === 'COMPLETED' ? ((await handle.result()) as MoneyMovementResult) : undefined;
      if (ended?.status !== row.status) mismatches++;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      mismatches++;
    }
  }
  return mismatches;
}

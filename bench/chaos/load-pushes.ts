import type { Client } from '@temporalio/client';
import type { Knex } from '../../db/knex';
import { workflowIds } from '../../workflows/ids';
import type { AcceptedPush } from './load-mix';
import { sleep } from './random';

/** Where a push stands: its status, from acceptance to its end (ms, once ended), and its allocation. */
interface PushRow {
  id: string;
  status: string;
  ms: number | null;
  allocated: boolean;
  /** Callbacks the API received for it (none: the status query settled it, or nothing yet). */
  callbacks: number;
  /** Whether the provider's answer to the prompt came back (its CheckoutRequestID recorded). */
  answered: boolean;
}

async function pushRows(db: Knex, pushes: AcceptedPush[]): Promise<Map<string, PushRow>> {
  const { rows } = await db.raw<{ rows: PushRow[] }>(
    `select t.id, t.status,
            extract(epoch from coalesce(t.posted_at, t.failed_at) - t.transacted_at) * 1000 as ms,
            exists (select 1 from loan_transactions e where e.transaction_id = t.id) as allocated,
            (select count(*) from mobile_money_callbacks c where c.transaction_ref = t.id::text) as callbacks,
            (t.checkout_request_id is not null or t.failure_reason = 'PUSH_REJECTED') as answered
       from transactions t where t.id = any(?::uuid[])`,
    [pushes.map((p) => p.id)],
  );
  return new Map(
    rows.map((row) => [
      row.id,
      { ...row, ms: row.ms === null ? null : Number(row.ms), callbacks: Number(row.callbacks) },
    ]),
  );
}

/** Pushes not yet at their end: not POSTED or FAILED, or a posted repayment its loan has not allocated. */
const open = (push: AcceptedPush, row: PushRow | undefined) =>
  !row ||
  (row.status !== 'POSTED' && row.status !== 'FAILED') ||
  (push.repayment && row.status === 'POSTED' && !row.allocated);

/** Waits until every push has ended (and every posted repayment is allocated), or `deadlineMs` passes. */
export async function settle(db: Knex, pushes: AcceptedPush[], deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const rows = await pushRows(db, pushes);
    if (!pushes.some((p) => open(p, rows.get(p.id))) || Date.now() > deadline) return;
    await sleep(500);
  }
}

export interface PushFigures {
  accepted: number;
  posted: number;
  failed: number;
  /** Not ended when the suite stopped waiting (0 expected): how many, and the first few with their status. */
  left: number;
  leftPushes: { id: string; status: string; repayment: boolean }[];
  /** Ended otherwise than its number decides at the simulator (0 expected). */
  wrongOutcome: number;
  /** Repayments POSTED but never allocated to their loan (0 expected). */
  unallocated: number;
  /** Ended with no callback received: the simulator's callback did not get through in its 5 s, the status query settled it. */
  noCallback: number;
  /** The prompt's answer never came back (no CheckoutRequestID): only its callback could settle it. */
  unanswered: number;
  /** From acceptance to POSTED or FAILED, ms, sorted. */
  completion: number[];
}

export async function pushFigures(db: Knex, pushes: AcceptedPush[]): Promise<PushFigures> {
  const rows = await pushRows(db, pushes);
  const ended = pushes.filter((p) => !open(p, rows.get(p.id)));
  return {
    accepted: pushes.length,
    posted: ended.filter((p) => rows.get(p.id)!.status === 'POSTED').length,
    failed: ended.filter((p) => rows.get(p.id)!.status === 'FAILED').length,
    left: pushes.length - ended.length,
    leftPushes: pushes
      .filter((p) => open(p, rows.get(p.id)))
      .slice(0, 5)
      .map((p) => ({ id: p.id, status: rows.get(p.id)?.status ?? 'absent', repayment: p.repayment })),
    wrongOutcome: ended.filter((p) => rows.get(p.id)!.status !== p.outcome).length,
    unallocated: pushes.filter((p) => p.repayment && rows.get(p.id)?.status === 'POSTED' && !rows.get(p.id)!.allocated)
      .length,
    noCallback: ended.filter((p) => rows.get(p.id)!.callbacks === 0).length,
    unanswered: pushes.filter((p) => rows.get(p.id) && !rows.get(p.id)!.answered).length,
    completion: ended.map((p) => rows.get(p.id)!.ms!).sort((a, b) => a - b),
  };
}

/** The slowest pushes (or those not ended), with where their time went: a slow tail's first clue. */
export async function slowestPushes(db: Knex, pushes: AcceptedPush[], count: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: Record<string, string | null>[] }>(
    `select t.id, t.status, t.failure_reason,
            extract(epoch from t.provider_request_attempted_at - t.transacted_at) * 1000 as to_request,
            extract(epoch from c.first - t.transacted_at) * 1000 as to_callback, c.dispositions,
            extract(epoch from coalesce(t.posted_at, t.failed_at) - t.transacted_at) * 1000 as to_end
       from transactions t
       left join lateral (select min(received_at) as first, string_agg(disposition, ',' order by id) as dispositions
                            from mobile_money_callbacks where transaction_ref = t.id::text) c on true
      where t.id = any(?::uuid[])
      order by to_end desc nulls first limit ?`,
    [pushes.map((p) => p.id), count],
  );
  const ms = (v: string | null | undefined) => (v === null ? '-' : `${Number(v).toFixed(0)} ms`);
  return rows.map(
    (r) =>
      `${r.id} ${r.status}${r.failure_reason ? ` (${r.failure_reason})` : ''}: prompt sent at ${ms(r.to_request)}, ` +
      `first callback at ${ms(r.to_callback)} (${r.dispositions ?? 'none'}), ended at ${ms(r.to_end)}`,
  );
}

/** Pushes not ended, with their run's state and last events (a stuck push's first clue). */
export async function describeLeft(temporal: Client, pushes: PushFigures): Promise<string[]> {
  return Promise.all(
    pushes.leftPushes.map(async (left) => {
      const handle = temporal.workflow.getHandle(workflowIds.stkPush(left.id));
      const run = await handle.describe().catch(() => undefined);
      // Each event's kind is the name of the one attributes field it carries.
      const events = ((await handle.fetchHistory().catch(() => undefined))?.events ?? []).map(
        (event) =>
          Object.keys(event)
            .find((key) => key.endsWith('EventAttributes') && event[key as keyof typeof event])
            ?.replace('EventAttributes', '') ?? '?',
      );
      return (
        `${left.id} (${left.repayment ? 'a repayment' : 'current account'}) ${left.status}; ` +
        `its run ${run ? `${run.status.name}, last events ${events.slice(-8).join(' ')}` : 'not found'}`
      );
    }),
  );
}

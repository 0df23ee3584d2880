import type { ChaosRecord } from '../../simulators/chaos';
import type { OperationState } from './callbacks-state';
import type { Operation, OperationKind } from './callbacks-workload';

/**
 * The callback chaos suite's tables: what the simulators did with each callback, by kind, and
 * how each operation's final state under chaos compares with the clean run's.
 */

/**
 * Kinds no status query replaces: when every copy is lost, nothing can tell the service. The SMS
 * gateway's delivery reports (it has no query), and a payout's B2C queue timeout: "not found"
 * from the Transaction Status releases a hold only after the provider's queue timeout was noted,
 * so without it the payout ends FAILED NO_RESULT at the wait's end (QUEUE_TIMEOUT in the clean
 * run). A payout's B2C result is backed by the query.
 */
export const NO_QUERY_KINDS = new Set(['b2c_timeout', 'sms_final']);

const delivered = (record: ChaosRecord) =>
  record.answers.some((answer) => typeof answer === 'number' && answer >= 200 && answer < 300);

const cell = (value: string | number, width: number) => String(value).padStart(width);

export function printDeliveries(records: readonly ChaosRecord[]): void {
  const kinds = [...new Set(records.map((r) => r.kind))].sort();
  const columns = ['callbacks', '0x', '1x', '2x', '3x', 'shuffled', 'late/q', 'late/no-q', 'forged', 'not-2xx'];
  console.log(
    '\nDeliveries by callback kind (late/q: released once the status query was answered; late/no-q: no query came or exists)',
  );
  console.log(`  ${'kind'.padEnd(22)}${columns.map((c) => cell(c, 10)).join('')}`);
  const row = (name: string, of: ChaosRecord[]) => {
    const count = (test: (r: ChaosRecord) => boolean) => of.filter(test).length;
    const values = [
      of.length,
      ...[0, 1, 2, 3].map((n) => count((r) => r.copies === n)),
      count((r) => r.timing === 'shuffled' && r.copies > 0),
      count((r) => r.released === 'after_query'),
      count((r) => r.released === 'no_query'),
      count((r) => r.forgery !== undefined),
      // Genuine copies the receiver did not take (a 5xx the provider would send again, an error).
      of.reduce((n, r) => n + r.answers.filter((a) => typeof a !== 'number' || a < 200 || a >= 300).length, 0),
    ];
    console.log(`  ${name.padEnd(22)}${values.map((v) => cell(v, 10)).join('')}`);
  };
  for (const kind of kinds)
    row(
      kind,
      records.filter((r) => r.kind === kind),
    );
  row('all', [...records]);

  const forgeries = [...new Set(records.flatMap((r) => (r.forgery ? [r.forgery] : [])))].sort();
  console.log('\nForged callbacks and what the service answered them');
  for (const forgery of forgeries) {
    const answers = new Map<string, number>();
    for (const r of records.filter((x) => x.forgery === forgery)) {
      const key = `${r.kind} ${String(r.forgedAnswer)}`;
      answers.set(key, (answers.get(key) ?? 0) + 1);
    }
    const text = [...answers].map(([key, n]) => `${key} ×${n}`).join(', ');
    console.log(`  ${forgery.padEnd(20)} ${text}`);
  }
}

/** A final state in a few words: a transaction's status and reason, how a text fared. */
function outcome({ state }: OperationState): string {
  if (typeof state.status === 'string') return [state.status, state.failure_reason].filter(Boolean).join(' ');
  const sends = (state.sends ?? []) as { delivery_status: string | null }[];
  return `text ${sends.map((s) => s.delivery_status ?? 'not reported').join(', ')}`;
}

export interface Comparison {
  kind: OperationKind;
  operations: number;
  equal: number;
  mismatches: number;
  /** Every copy of a callback with no status query in its protocol lost: not comparable. */
  unrecoverable: number;
  stuckClean: number;
  stuckChaos: number;
}

/** Compares each operation's final state in both runs; prints the first differences. */
export function compareRuns(
  operations: readonly Operation[],
  clean: readonly OperationState[],
  chaos: readonly OperationState[],
  records: readonly ChaosRecord[],
): { rows: Comparison[]; unrecoverableAs: Map<string, number> } {
  const byRequest = new Map<string, ChaosRecord[]>();
  for (const r of records) byRequest.set(r.request, [...(byRequest.get(r.request) ?? []), r]);
  const kinds = [...new Set(operations.map((op) => op.kind))];
  const rows = new Map(
    kinds.map((kind): [OperationKind, Comparison] => [
      kind,
      { kind, operations: 0, equal: 0, mismatches: 0, unrecoverable: 0, stuckClean: 0, stuckChaos: 0 },
    ]),
  );
  const unrecoverableAs = new Map<string, number>();
  let shown = 0;
  for (const op of operations) {
    const row = rows.get(op.kind)!;
    const a = clean[op.index]!;
    const b = chaos[op.index]!;
    const planned = b.requests.flatMap((request) => byRequest.get(request) ?? []);
    row.operations++;
    if (!a.final) row.stuckClean++;
    if (!b.final) row.stuckChaos++;
    if (!a.final || !b.final) continue;
    if (JSON.stringify(a.state) === JSON.stringify(b.state)) {
      row.equal++;
      continue;
    }
    if (planned.some((r) => NO_QUERY_KINDS.has(r.kind) && !delivered(r))) {
      row.unrecoverable++;
      const became = `${op.kind}: ${outcome(a)} in the clean run, ${outcome(b)} under chaos`;
      unrecoverableAs.set(became, (unrecoverableAs.get(became) ?? 0) + 1);
      continue;
    }
    row.mismatches++;
    if (shown++ < 10) {
      console.log(
        `\n  MISMATCH operation ${op.index} (${op.kind}, digit ${op.digit}${op.outcome ? `, ${op.outcome}` : ''})`,
      );
      console.log(`    clean: ${JSON.stringify(a.state)}`);
      console.log(`    chaos: ${JSON.stringify(b.state)}`);
      for (const r of planned) console.log(`    callback: ${JSON.stringify(r)}`);
      for (const [run, state] of [
        ['clean', a],
        ['chaos', b],
      ] as const)
        for (const line of state.evidence ?? []) console.log(`    ${run} run: ${line}`);
    }
  }
  return { rows: [...rows.values()], unrecoverableAs };
}

export function printComparison(rows: readonly Comparison[]): void {
  const keys = ['operations', 'equal', 'mismatches', 'unrecoverable', 'stuckClean', 'stuckChaos'] as const;
  const columns = ['operations', 'equal', 'mismatches', 'lost/no-q', 'stuck-clean', 'stuck-chaos'];
  console.log('\nFinal states under chaos against the clean run (mismatches and stuck: 0 expected)');
  console.log(`  ${'operation'.padEnd(12)}${columns.map((c) => cell(c, 12)).join('')}`);
  const line = (name: string, values: number[]) =>
    console.log(`  ${name.padEnd(12)}${values.map((v) => cell(v, 12)).join('')}`);
  for (const r of rows)
    line(
      r.kind,
      keys.map((k) => r[k]),
    );
  line(
    'all',
    keys.map((k) => rows.reduce((n, r) => n + r[k], 0)),
  );
}

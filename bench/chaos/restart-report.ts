import type { Figure } from './consistency';
import type { Answer, Operation } from './restart-load';

/** The restarts suite's tables: each outage and its recovery, and every answer the clients got. */

export interface OutageFigures {
  name: string;
  dependency: 'postgres' | 'temporal';
  /** From beginning to stop it until it answered again. */
  downSeconds: number;
  /** Readiness answers while down, and how many of them were 503. */
  polls: number;
  polls503: number;
  /** From the dependency's return until /readyz was 200, and until a new push was POSTED (ms). */
  readyAfterMs?: number;
  pushAfterMs?: number;
  /** Postgres only: until the API listened for KYC status changes again (db/kyc/hot-reads.ts), ms. */
  listenerAfterMs?: number;
  /** From stopping the dependency to its return (ms since the epoch): the requests sent then are counted by answer. */
  from: number;
  to: number;
}

/** The run's shape, for the table's title. */
export interface RunSize {
  rate: number;
  borrowers: number;
  downMs: number;
  seed: number;
}

const seconds = (ms: number | undefined) => (ms === undefined ? 'never' : `${(ms / 1000).toFixed(1)} s`);

/** Once every request has its answer. */
export function printOutages(outages: OutageFigures[], answers: Answer[], size: RunSize) {
  console.log(
    `\nRestarts under load: ${size.rate} pushes/s (a third repayments) from ${size.borrowers} borrowers, ` +
      `each outage ${size.downMs / 1000} s, seed ${size.seed}`,
  );
  const row = (cells: string[]) =>
    `  ${cells[0]!.padEnd(28)} ${cells
      .slice(1, 6)
      .map((c, i) => c.padStart([7, 20, 12, 11, 13][i]!))
      .join(' ')}  ${cells[6]}`;
  console.log(
    row([
      'outage',
      'down',
      '/readyz while down',
      'ready after',
      'push after',
      'LISTEN after',
      'requests sent meanwhile: 201 / 503 / other',
    ]),
  );
  for (const o of outages) {
    const sent = answers.filter((a) => a.at >= o.from && a.at < o.to);
    const count = (status: number) => sent.filter((a) => a.status === status).length;
    console.log(
      row([
        o.name,
        seconds(o.downSeconds * 1000),
        `${o.polls503}/${o.polls} × 503`,
        seconds(o.readyAfterMs),
        seconds(o.pushAfterMs),
        o.dependency === 'postgres' ? seconds(o.listenerAfterMs) : '-',
        `${sent.length}: ${count(201)} / ${count(503)} / ${sent.length - count(201) - count(503)}`,
      ]),
    );
  }
}

export function outageFigures(outages: OutageFigures[]): Figure[] {
  return [
    {
      name: '/readyz not 503 while down',
      value: outages.reduce((n, o) => n + o.polls - o.polls503, 0),
      expectZero: true,
    },
    {
      name: 'outages not recovered',
      value: outages.filter(
        (o) =>
          o.readyAfterMs === undefined ||
          o.pushAfterMs === undefined ||
          (o.dependency === 'postgres' && o.listenerAfterMs === undefined),
      ).length,
      expectZero: true,
    },
  ];
}

/** Every answer over the run by status, and the figures that must be zero among them. */
export function printAnswers(answers: Answer[], operations: Operation[]): Figure[] {
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  const statuses = [...byStatus].sort(([a], [b]) => a - b);
  console.log(
    `\n  ${operations.length} pushes asked for, ${operations.filter((op) => op.id).length} accepted; ` +
      `${answers.length} answers: ${statuses.map(([status, n]) => `${status || 'no answer'} × ${n}`).join(', ')}`,
  );
  const odd = answers.find((a) => a.status !== 201 && a.status !== 503);
  if (odd) console.log(`  first answer other than 201 or 503: ${odd.status || 'no answer'} ${odd.sample ?? ''}`);
  return [
    {
      name: 'answers other than 201 or 503',
      value: answers.filter((a) => a.status !== 201 && a.status !== 503).length,
      expectZero: true,
    },
    {
      name: '503s not in the error shape',
      value: answers.filter((a) => a.wellFormed503 === false).length,
      expectZero: true,
    },
  ];
}

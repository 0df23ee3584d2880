import type { Figure } from './consistency';
import type { Answer, Operation } from './restart-load';

/** The restarts suite's tables: each outage and its recovery, and every answer the clients got. */

export interface OutageFigures {
  name: string;
  dependency: 'postgres' | 'temporal' | 'api';
  /** From beginning to stop it until it answered again. */
  downSeconds: number;
  /** Readiness answers while down, and how many of them were the one expected (503; 200 with one API instance down). */
  polls: number;
  expectedStatus: 200 | 503;
  pollsExpected: number;
  /** From the dependency's return until /readyz was 200, and until a new push was POSTED (ms). */
  readyAfterMs?: number;
  pushAfterMs?: number;
  /** Postgres only: until the API listened for KYC status changes again (db/kyc/hot-reads.ts), ms. */
  listenerAfterMs?: number;
  /** An API instance killed: the 5xx but 503 its /metrics counted before (its counters die with it). */
  serverErrorsBefore: number;
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
      'requests sent meanwhile: 201 / 503 / 502 or 409 in progress / other',
    ]),
  );
  for (const o of outages) {
    const sent = answers.filter((a) => a.at >= o.from && a.at < o.to);
    const count = (status: number) => sent.filter((a) => a.status === status).length;
    const inProgress = sent.filter(isCut).length;
    console.log(
      row([
        o.name,
        seconds(o.downSeconds * 1000),
        `${o.pollsExpected}/${o.polls} × ${o.expectedStatus}`,
        seconds(o.readyAfterMs),
        seconds(o.pushAfterMs),
        o.dependency === 'postgres' ? seconds(o.listenerAfterMs) : '-',
        `${sent.length}: ${count(201)} / ${count(503)} / ${inProgress} / ${sent.length - count(201) - count(503) - inProgress}`,
      ]),
    );
  }
}

export function outageFigures(outages: OutageFigures[]): Figure[] {
  return [
    {
      name: '/readyz not 503 while a dependency was down, not 200 while one API instance was',
      value: outages.reduce((n, o) => n + o.polls - o.pollsExpected, 0),
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

const isInProgress = (a: Answer) => a.status === 409 && a.code === 'IDEMPOTENCY_REQUEST_IN_PROGRESS';
/** What a request cut by an API instance's death gets: the proxy's 502, then 409 in progress while the dead one's lock holds its key. */
const isCut = (a: Answer) => a.status === 502 || isInProgress(a);
const expected = (a: Answer) => a.status === 201 || a.status === 503 || isCut(a);

/**
 * Every answer over the run by status, and the figures that must be zero among them. A request
 * cut by an instance's kill is answered 502 by the proxy, and its retries 409 in progress until
 * the dead instance's lock on the key runs out: expected only within `cutWindows` (each kill,
 * and the lock time after it), zero elsewhere.
 */
export function printAnswers(
  answers: Answer[],
  operations: Operation[],
  cutWindows: { from: number; to: number }[],
): Figure[] {
  // By when it was answered: a request sent just before the kill is cut by it.
  const inWindow = (a: Answer) => {
    const at = a.answeredAt ?? a.at;
    return cutWindows.some((w) => at >= w.from && at <= w.to);
  };
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  const statuses = [...byStatus].sort(([a], [b]) => a - b);
  console.log(
    `\n  ${operations.length} pushes asked for, ${operations.filter((op) => op.id).length} accepted; ` +
      `${answers.length} answers: ${statuses.map(([status, n]) => `${status || 'no answer'} × ${n}`).join(', ')}`,
  );
  const odd = answers.find((a) => !expected(a));
  if (odd)
    console.log(
      `  first answer other than 201, 503, 502 or 409 in progress: ${odd.status || 'no answer'} ${odd.sample ?? ''}`,
    );
  const strayCut = answers.find((a) => isCut(a) && !inWindow(a));
  if (strayCut)
    console.log(
      `  first 502 or 409 in progress outside a kill: ${strayCut.status} at ${new Date(strayCut.at).toISOString()} ${strayCut.sample ?? ''}`,
    );
  return [
    {
      name: 'answers other than 201, 503, 502 or 409 in progress',
      value: answers.filter((a) => !expected(a)).length,
      expectZero: true,
    },
    {
      name: '502 or 409 in progress after an API instance was killed',
      value: answers.filter((a) => isCut(a) && inWindow(a)).length,
    },
    {
      name: '502 or 409 in progress at any other time',
      value: answers.filter((a) => isCut(a) && !inWindow(a)).length,
      expectZero: true,
    },
    {
      name: '503s not in the error shape',
      value: answers.filter((a) => a.wellFormed503 === false).length,
      expectZero: true,
    },
  ];
}

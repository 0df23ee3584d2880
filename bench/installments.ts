import { closedLoop, compare, type Measurement, measure, type Target, withServer } from './lib';

/**
 * The installment transaction lists (GET /v1/accounts/{accountId}/installments/transactions and
 * …/installments/{id}/transactions) of one credit account with 1,000,000 repayment events
 * (servers/installments.ts writes them in bulk), authenticated:
 *   - each page (first, middle and last of the account list; first and last of one installment's)
 *     against a bare Koa + pg `SELECT 1` route in the same run, with the authenticated baseline
 *     (GET /v1/auth/whoami: token, caller and rate limits, no read) beside it;
 *   - the last page's p50 latency over the first page's, in alternating rounds: goal at most 1.3
 *     (keyset paging: a page costs the same wherever it sits).
 * BENCH_QUICK=1: 50,000 events, shorter rounds (a smoke run; its figures are not the goal's).
 */
const QUICK = Boolean(process.env.BENCH_QUICK);
const CONNECTIONS = 16;
const SECONDS = QUICK ? 1 : 4;
const ROUNDS = QUICK ? 1 : 3;
const LATENCY_ROUNDS = QUICK ? 3 : 5;
const GOAL = 1.3;

interface Info {
  events: number;
  baseline: string;
  whoami: string;
  firstPage: string;
  middlePage: string;
  lastPage: string;
  installmentFirstPage: string;
  installmentLastPage: string;
  token: string;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function installmentsBench(): Promise<number> {
  return withServer<Info, number>('installments.ts', async (info) => {
    const headers = { Authorization: `Bearer ${info.token}` };
    const pages: Target[] = [
      { name: 'account list, first page', url: info.firstPage, headers },
      { name: 'account list, middle page', url: info.middlePage, headers },
      { name: 'account list, last page', url: info.lastPage, headers },
      { name: 'one installment, first page', url: info.installmentFirstPage, headers },
      { name: 'one installment, last page', url: info.installmentLastPage, headers },
    ];
    // Each page answers 200 with 20 rows, the last pages with no older page after them.
    for (const page of pages) {
      const response = await fetch(page.url, { headers });
      const body = (await response.json()) as { data?: unknown[]; links?: { next: string | null } };
      if (response.status !== 200 || body.data?.length !== 20)
        throw new Error(`${page.name} answered ${response.status} with ${body.data?.length} rows: ${page.url}`);
      if (page.name.endsWith('last page') && body.links?.next !== null)
        throw new Error(`${page.name} is not the last: links.next is ${body.links?.next}`);
    }
    const bare: Target = { name: 'bare Koa + pg SELECT 1', url: info.baseline };
    const whoami: Target = { name: 'whoami (JWT, caller, rate limits; no read)', url: info.whoami, headers };

    console.log(
      `\nInstallment transaction lists, ${info.events.toLocaleString('en')} events on one credit account, 20 rows a page${QUICK ? '  [BENCH_QUICK: a smoke run]' : ''}`,
    );
    const ratios: Record<string, number> = {};
    for (const page of [whoami, ...pages])
      ratios[page.name] = await compare({
        title: `${page.name} vs bare Koa + pg SELECT 1`,
        baseline: bare,
        candidate: page,
        connections: CONNECTIONS,
        seconds: SECONDS,
        rounds: ROUNDS,
      });

    // Issue 34's goal: each page's throughput at least half of whoami's (both against the same bare baseline).
    console.log('\nEach page against whoami (throughputs, each over the same bare baseline)');
    for (const page of pages) {
      const ofWhoami = ratios[page.name]! / ratios[whoami.name]!;
      console.log(
        `  ${page.name} / whoami throughput ${ofWhoami.toFixed(2)} (goal at least 0.5, issue 34) ${ofWhoami >= 0.5 ? 'met' : 'NOT met'}`,
      );
    }

    // p50 of every page and of whoami, in alternating rounds (medians): each page against the
    // authenticated baseline, and the goal, the last page over the first.
    const targets = [whoami, ...pages];
    const runs = new Map<Target, Measurement[]>(targets.map((t) => [t, []]));
    for (let r = 0; r < LATENCY_ROUNDS; r++)
      for (const target of targets) runs.get(target)!.push(await measure(target, CONNECTIONS, SECONDS));
    const p50 = (target: Target) => median(runs.get(target)!.map((m) => m.p50));
    const errors = [...runs.values()].flat().reduce((n, m) => n + m.errors, 0);
    console.log(
      `\nLatency  (${CONNECTIONS} connections, ${LATENCY_ROUNDS} x ${SECONDS}s alternating rounds, median p50 and p99)`,
    );
    for (const target of targets) {
      const ms = runs.get(target)!;
      console.log(
        `  ${target.name.padEnd(44)} p50 ${String(p50(target)).padStart(3)} ms  p99 ${String(median(ms.map((m) => m.p99))).padStart(3)} ms` +
          `  p50 / whoami p50 ${(p50(target) / p50(whoami)).toFixed(2)}  throughput / bare SELECT 1 ${ratios[target.name]!.toFixed(2)}`,
      );
    }
    const [first, middle, last] = pages as [Target, Target, Target];
    const ratio = p50(last) / p50(first);
    console.log(
      `  last page p50 / first page p50 ${ratio.toFixed(2)} (goal at most ${GOAL}) ${ratio <= GOAL ? 'met' : 'NOT met'}`,
    );
    console.log(`  middle page p50 / first page p50 ${(p50(middle) / p50(first)).toFixed(2)} (no goal set)`);
    // autocannon's latencies are whole milliseconds: one caller at a time, timed here, shows finer steps.
    const single = async (target: Target) =>
      (
        await closedLoop(1, SECONDS * 2, async () => {
          const response = await fetch(target.url, { headers: target.headers });
          await response.arrayBuffer();
          if (response.status !== 200) throw new Error(`${response.status}`);
        })
      ).p50;
    const singles = { first: [] as number[], last: [] as number[] };
    for (let r = 0; r < 3; r++) {
      singles.first.push(await single(first));
      singles.last.push(await single(last));
    }
    const [s1, s2] = [median(singles.first), median(singles.last)];
    console.log(
      `  one caller at a time (3 x ${SECONDS * 2}s alternating, sub-ms): first page p50 ${s1.toFixed(2)} ms, last page p50 ${s2.toFixed(2)} ms, ratio ${(s2 / s1).toFixed(2)}`,
    );
    if (errors > 0) console.log('  warning: some requests failed; the ratios are not trustworthy');
    return ratio;
  });
}

if (require.main === module) {
  installmentsBench().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

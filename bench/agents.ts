import { closedLoop, compare, type Loop, type Target, withServer } from './lib';
import type { AgentsBenchInfo } from './servers/agents';

/**
 * The agent list (issue 18): GET /v1/agents for a leader over 100,000 agents in one organization
 * (20 leaders, 10 managers each, about 500 agents per manager: the leader sees 5,000), the
 * service and a fresh database seeded by bench/servers/agents.ts in a process of its own.
 *   - The leader's first page, without and with `q` (a search matching about 2 % of its agents),
 *     in requests per second against the authenticated whoami route in the same run, as the same
 *     leader: goal at least 0.5 each.
 *   - The last page's latency over the first page's (keyset paging: goal at most 1.3), one
 *     request at a time in alternating rounds, p50; the same with `q` printed beside it.
 * Every URL is checked once (status, page size, links) before anything is timed.
 */
const ROUNDS = 3;
const SECONDS = 4;

export interface AgentsBenchResult {
  list: number;
  search: number;
  lastOverFirst: number;
}

interface Page {
  data: { name: string; email: string }[];
  links: { next: string | null; prev: string | null };
}

async function page(target: Target): Promise<Page> {
  const response = await fetch(target.url, { headers: target.headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${target.name} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Page;
}

/** That a page is full, and whether it is the first and the last as expected. */
async function check(target: Target, size: number, first: boolean, q?: string): Promise<void> {
  const { data, links } = await page(target);
  const problems = [
    data.length !== size && `${data.length} rows, not ${size}`,
    first !== (links.prev === null) && `links.prev ${links.prev === null ? 'null' : 'given'}`,
    first === (links.next === null) && `links.next ${links.next === null ? 'null' : 'given'}`,
    q !== undefined &&
      data.some((a) => !`${a.name} ${a.email}`.toLowerCase().includes(q.toLowerCase())) &&
      `rows not matching ${q}`,
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`${target.name}: ${problems.join(', ')}`);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Two URLs one request at a time, in alternating rounds (after a second's warm-up each): medians. */
async function latencies(a: Target, b: Target): Promise<[Loop, Loop]> {
  const op = (target: Target) => async () => void (await page(target));
  await closedLoop(1, 1, op(a));
  await closedLoop(1, 1, op(b));
  const runs: [Loop[], Loop[]] = [[], []];
  for (let i = 0; i < ROUNDS; i++) {
    runs[0].push(await closedLoop(1, SECONDS, op(a)));
    runs[1].push(await closedLoop(1, SECONDS, op(b)));
  }
  const summary = (loops: Loop[]): Loop => ({
    perSecond: median(loops.map((l) => l.perSecond)),
    p50: median(loops.map((l) => l.p50)),
    p99: median(loops.map((l) => l.p99)),
    errors: loops.reduce((n, l) => n + l.errors, 0),
  });
  return [summary(runs[0]), summary(runs[1])];
}

const latencyLine = (name: string, m: Loop) =>
  `  ${name.padEnd(44)} ${m.perSecond.toFixed(0).padStart(7)} req/s  p50 ${m.p50.toFixed(2)} ms  p99 ${m.p99.toFixed(2)} ms  errors ${m.errors}`;

export async function agentsBench(): Promise<AgentsBenchResult> {
  return withServer<AgentsBenchInfo, AgentsBenchResult>('agents.ts', async (info) => {
    const headers = { Authorization: `Bearer ${info.token}` };
    const whoami: Target = { name: 'whoami (JWT, caller, rate limits)', url: info.whoami, headers };
    const first: Target = { name: `agents, first page (size ${info.size})`, url: info.agents, headers };
    const last: Target = { name: `agents, last page (size ${info.size})`, url: info.agentsLast, headers };
    const search: Target = { name: `agents q=${info.q}, first page`, url: info.search, headers };
    const searchLast: Target = { name: `agents q=${info.q}, last page`, url: info.searchLast, headers };
    await check(first, info.size, true);
    await check(last, info.size, false);
    await check(search, info.size, true, info.q);
    await check(searchLast, info.size, false, info.q);
    console.log(
      `\n(${info.networkAgents.toLocaleString('en')} agents generated, ${info.organizationAgents.toLocaleString('en')} in the organization; ` +
        `leader ${info.leader.name} sees ${info.visible.toLocaleString('en')}, ${info.matching} of them matching q="${info.q}"; pages of ${info.size}, checked)`,
    );

    const list = await compare({
      title: 'GET /v1/agents as a leader (first page) vs authenticated GET /v1/auth/whoami',
      baseline: whoami,
      candidate: first,
      goal: 0.5,
      rounds: ROUNDS,
      seconds: SECONDS,
    });
    const searched = await compare({
      title: `GET /v1/agents?q=${info.q} as a leader (first page) vs authenticated GET /v1/auth/whoami`,
      baseline: whoami,
      candidate: search,
      goal: 0.5,
      rounds: ROUNDS,
      seconds: SECONDS,
    });

    const [f, l] = await latencies(first, last);
    const [sf, sl] = await latencies(search, searchLast);
    const lastOverFirst = l.p50 / f.p50;
    console.log(
      `\nGET /v1/agents as a leader: the last page's latency over the first's  (one request at a time, ${ROUNDS} x ${SECONDS}s rounds, medians)`,
    );
    console.log(latencyLine(first.name, f));
    console.log(latencyLine(last.name, l));
    console.log(
      `  ratio p50 ${lastOverFirst.toFixed(2)}  p99 ${(l.p99 / f.p99).toFixed(2)} (last / first; goal at most 1.3 at p50) ${lastOverFirst <= 1.3 ? 'met' : 'NOT met'}`,
    );
    console.log(latencyLine(search.name, sf));
    console.log(latencyLine(searchLast.name, sl));
    console.log(
      `  ratio p50 ${(sl.p50 / sf.p50).toFixed(2)}  p99 ${(sl.p99 / sf.p99).toFixed(2)} (last / first with q; no goal)`,
    );
    if (f.errors + l.errors + sf.errors + sl.errors > 0)
      console.log('  warning: some requests failed; the ratios are not trustworthy');
    return { list, search: searched, lastOverFirst };
  });
}

if (require.main === module) {
  agentsBench().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

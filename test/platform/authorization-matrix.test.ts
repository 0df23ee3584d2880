import { strict as assert } from 'node:assert';
import {
  CALLER_KINDS,
  type CallerKind,
  type Expected,
  expectedOf,
  RULES,
  traits,
} from '../support/authorization-matrix';
import {
  type Cell,
  type Context,
  type Exercise,
  type Fixture,
  type Instance,
  type Reply,
  type Request,
  describeRows,
  snapshot,
} from '../support/authorization-exercise';
import { EXERCISES } from '../support/authorization-routes';
import { buildWorld, type Person, tokenOf, type World } from '../support/authorization-world';
import {
  type Answer,
  inPool,
  type OpenApiDocument,
  type Operation,
  operationsOf,
  problemsOf,
  rawSender,
  type WireRequest,
} from '../support/fuzz';
import { harness } from '../support/harness';
import { call } from '../support/http';

/**
 * Issue 19, item 5: every route × every caller kind × the targets the route can name (the
 * caller's own, its organization's, another organization's; another merchant's, a peer agent's, a
 * subordinate's where the route has one). The expected status of each cell is derived from RULES
 * and CALLERS (test/support/authorization-matrix.ts); how each route is exercised is EXERCISES
 * (authorization-routes.ts, one module per area). Denied cells run first, target by target, and must leave the rows
 * their route could touch as they were (compared in Postgres before and after), answer in their
 * family's error shape and carry none of the target's data; allowed cells then run one at a time
 * and must do what the route says. AUTHZ_TABLE=1 (or FUZZ_TABLE=1) prints the per-route table.
 */

const CONCURRENCY = 8;
const seconds = (usage: NodeJS.CpuUsage) => ((usage.user + usage.system) / 1e6).toFixed(1);
const keyOf = (op: Operation) => `${op.method} ${op.template}`;

interface Finding {
  leak: boolean;
  text: string;
}
interface RouteFigures {
  key: string;
  cells: number;
  allowed: number;
  denied: number;
  leaks: number;
  unexpected: number;
  /** Preparing the route's targets, then its cells. */
  prepareMs: number;
  cellsMs: number;
}

interface PlannedCell extends Cell {
  expected: Expected;
}

/** The person behind a user caller: the route's subject for `customer`, else the world's. */
function personOf(world: World, kind: CallerKind, fixture: Fixture): Person | undefined {
  if (traits(kind).credential !== 'user') return undefined;
  if (kind === 'customer') return fixture.subject ?? world.people.customer;
  return world.people[kind as keyof World['people']];
}
async function credentialOf(world: World, cell: Cell): Promise<string | undefined> {
  return cell.kind === 'customer' && cell.person ? tokenOf(cell.person) : world.credentials[cell.kind];
}

function wire(op: Operation, request: Request, credential: string | undefined): WireRequest {
  const path = op.template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = request.params?.[name];
    if (value === undefined) throw new Error(`${keyOf(op)}: no value for path parameter ${name}`);
    return encodeURIComponent(value);
  });
  const query = request.query ? new URLSearchParams(request.query).toString() : '';
  const headers: Record<string, string> = { ...request.headers };
  if (credential !== undefined) headers.Authorization = `Bearer ${credential}`;
  const body =
    request.json !== undefined
      ? { bytes: Buffer.from(JSON.stringify(request.json)), contentType: 'application/json' }
      : request.form !== undefined
        ? {
            bytes: Buffer.from(new URLSearchParams(request.form).toString()),
            contentType: 'application/x-www-form-urlencoded',
          }
        : undefined;
  return { method: op.method, path: query ? `${path}?${query}` : path, headers, body };
}

function replyOf(answer: Answer): Reply {
  const text = answer.body.toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: answer.status, text, body };
}

/**
 * The denied cells that changed a target's rows: each sent again alone, between two snapshots of
 * the rows, on a fresh instance of the target where the route makes one (the first change may have
 * used the target up). A change that does not happen again is laid on every denied cell of the target.
 */
async function culprits<C extends Cell>(onTarget: C[], changes: (cell: C) => Promise<boolean>): Promise<Set<C>> {
  const found = new Set<C>();
  for (const cell of onTarget) if (await changes(cell)) found.add(cell);
  return found.size > 0 ? found : new Set(onTarget);
}

/** What a denied answer gives away or gets wrong. */
function deniedFindings(op: Operation, cell: PlannedCell, answer: Answer, reply: Reply, secrets: string[]): Finding[] {
  const expected = cell.expected as Extract<Expected, { allowed: false }>;
  if (answer.status >= 200 && answer.status < 300)
    return [{ leak: true, text: `answered ${answer.status}, must be denied ${expected.status}` }];
  const findings: Finding[] = [];
  if (answer.status !== expected.status)
    findings.push({
      leak: false,
      text: `answered ${answer.status} ${reply.body?.code ?? ''}, expected ${expected.status}`,
    });
  else if (expected.code && reply.body?.code !== expected.code)
    findings.push({ leak: false, text: `code ${reply.body?.code}, expected ${expected.code}` });
  for (const problem of problemsOf(op, answer)) findings.push({ leak: /shape|not JSON/.test(problem), text: problem });
  for (const secret of secrets)
    if (reply.text.includes(secret)) findings.push({ leak: true, text: `the answer carries the target's ${secret}` });
  return findings;
}

describe('authorization matrix: every route × every caller kind answers the status its rule derives; a denied call changes nothing in Postgres and leaks nothing', () => {
  let world: World;
  let operations: Operation[];
  let worldMs = 0;

  before(async function () {
    this.timeout(180_000);
    const document = await call('GET', '/openapi.json');
    assert.equal(document.status, 200);
    // The harness API also serves test-only routes; they are not the service's.
    operations = operationsOf(document.body as OpenApiDocument).filter((op) => !op.template.includes('/__test__/'));
    const building = Date.now();
    world = await buildWorld();
    // The slow households (loans taken and repaid, funded accounts) are built side by side.
    await Promise.all([
      world.loanHousehold(),
      world.moneyHousehold(),
      world.kycHousehold(),
      world.borrowers(),
      world.warmActivated(3), // the three phone-change routes' customers
    ]);
    worldMs = Date.now() - building;
  });

  it('every operation in /openapi.json has a rule and an exercise, and every rule an operation', () => {
    const served = new Set(operations.map(keyOf));
    const missing = [...served].filter((key) => !RULES[key] || !EXERCISES[key]);
    const stale = [...new Set([...Object.keys(RULES), ...Object.keys(EXERCISES)])].filter((key) => !served.has(key));
    assert.deepEqual({ missing, stale }, { missing: [], stale: [] });
  });

  it('allowed, denied and leaks per route: leaks 0 and every status as derived', async function () {
    this.timeout(300_000);
    const started = Date.now();
    const cpu = process.cpuUsage();
    const sender = rawSender(harness().baseUrl, { concurrency: CONCURRENCY, timeoutMs: 30_000 });
    const findings: string[] = [];
    const table: RouteFigures[] = [];
    try {
      for (const op of operations
        .filter((o) => RULES[keyOf(o)] && EXERCISES[keyOf(o)])
        .sort((a, b) => Object.keys(RULES).indexOf(keyOf(a)) - Object.keys(RULES).indexOf(keyOf(b)))) {
        table.push(await runRoute(op, sender, (text) => findings.push(`${keyOf(op)} ${text}`)));
      }
    } finally {
      sender.close();
    }
    const total = table.reduce(
      (t, r) => ({
        cells: t.cells + r.cells,
        allowed: t.allowed + r.allowed,
        denied: t.denied + r.denied,
        leaks: t.leaks + r.leaks,
        unexpected: t.unexpected + r.unexpected,
      }),
      { cells: 0, allowed: 0, denied: 0, leaks: 0, unexpected: 0 },
    );
    const summary =
      `${table.length} routes × ${CALLER_KINDS.length} caller kinds: ${total.cells} cells, ${total.allowed} allowed, ` +
      `${total.denied} denied, ${total.leaks} leaks, ${total.unexpected} unexpected in ${((Date.now() - started) / 1000).toFixed(1)} s ` +
      `(this process's CPU ${seconds(process.cpuUsage(cpu))} s, the API's and worker's included; the world built in ${(worldMs / 1000).toFixed(1)} s before)`;
    if (process.env.AUTHZ_TABLE || process.env.FUZZ_TABLE) console.log(printTable(table, summary));
    if (findings.length > 0) assert.fail(`${summary}\n${findings.join('\n')}`);
  });

  async function runRoute(
    op: Operation,
    sender: ReturnType<typeof rawSender>,
    report: (text: string) => void,
  ): Promise<RouteFigures> {
    const key = keyOf(op);
    const exercise = EXERCISES[key]!;
    const preparing = Date.now();
    const fixture: Fixture = exercise.prepare ? await exercise.prepare(world) : { targets: [] };
    const prepared = Date.now();
    const context: Context = { world, fixture };
    const targets: (Instance | undefined)[] = fixture.targets.length > 0 ? fixture.targets : [undefined];
    const cells: PlannedCell[] = CALLER_KINDS.flatMap((kind) =>
      targets.map((target) => ({
        kind,
        person: personOf(world, kind, fixture),
        target,
        expected: expectedOf(RULES[key]!, kind, target),
      })),
    );
    const figures: RouteFigures = {
      key,
      cells: cells.length,
      allowed: 0,
      denied: 0,
      leaks: 0,
      unexpected: 0,
      prepareMs: prepared - preparing,
      cellsMs: 0,
    };
    const run: RouteRun = {
      op,
      exercise,
      fixture,
      context,
      targets,
      cells,
      people: [...new Set(cells.flatMap((c) => (c.person ? [c.person.id] : [])))],
      async send(cell) {
        const request = exercise.request ? exercise.request(cell, context) : {};
        const built = wire(op, request, await credentialOf(world, cell));
        const answer = await sender.send(built);
        return { answer, reply: replyOf(answer), sent: `${built.path} ${built.body?.bytes.toString('utf8') ?? ''}` };
      },
      record(cell, found) {
        for (const f of found)
          report(`← ${cell.kind} on ${cell.target?.label ?? 'itself'}: ${f.leak ? 'LEAK ' : ''}${f.text}`);
        if (found.some((f) => f.leak)) figures.leaks++;
        else if (found.length > 0) figures.unexpected++;
        return found.length === 0;
      },
    };
    try {
      figures.denied = await runDenied(run);
      figures.allowed = await runAllowed(run);
    } finally {
      await fixture.cleanup?.();
    }
    figures.cellsMs = Date.now() - prepared;
    return figures;
  }
});

/** One route's cells and what they share. */
interface RouteRun {
  op: Operation;
  exercise: Exercise;
  fixture: Fixture;
  context: Context;
  targets: (Instance | undefined)[];
  cells: PlannedCell[];
  /** The people behind the cells' user callers (the rows of their own a route could touch). */
  people: string[];
  send(cell: Cell): Promise<{ answer: Answer; reply: Reply; sent: string }>;
  /** Reports a cell's findings; true when it has none. */
  record(cell: Cell, found: Finding[]): boolean;
}

/**
 * Denied cells, all at once: each answers its derived refusal in its family's shape, carries none
 * of the target's data, and the rows the route could touch for each target do not move. Answers
 * how many were denied as derived.
 */
async function runDenied(run: RouteRun): Promise<number> {
  const { exercise, fixture, context, targets, people } = run;
  const denied = run.cells.filter((c) => !c.expected.allowed);
  const specs = targets.map((target) => exercise.rows?.(target, people, context) ?? []);
  const before = await Promise.all(specs.map(snapshot));
  const answered: { cell: PlannedCell; answer: Answer; reply: Reply; sent: string }[] = [];
  await inPool(denied, CONCURRENCY, async (cell) => {
    answered.push({ cell, ...(await run.send(cell)) });
  });
  const after = await Promise.all(specs.map(snapshot));
  const moved = specs.map((group, g) => group.filter((_, i) => before[g]![i] !== after[g]![i]).map(describeRows));
  const changes = async (cell: PlannedCell) => {
    const target = fixture.fresh && cell.target ? await fixture.fresh(cell.target, cell.kind) : cell.target;
    const rows = exercise.rows?.(target, people, context) ?? [];
    const first = await snapshot(rows);
    await run.send({ ...cell, target });
    return (await snapshot(rows)).some((h, i) => h !== first[i]);
  };
  const blamed = await Promise.all(
    targets.map((target, g) =>
      moved[g]!.length > 0
        ? culprits(
            denied.filter((c) => c.target === target),
            changes,
          )
        : new Set<PlannedCell>(),
    ),
  );
  let count = 0;
  for (const { cell, answer, reply, sent } of answered) {
    const group = targets.indexOf(cell.target);
    const secrets = [...(cell.target?.secrets ?? []), ...(cell.kind === 'customer' ? [] : (fixture.secrets ?? []))];
    const found = deniedFindings(
      run.op,
      cell,
      answer,
      reply,
      secrets.filter((s) => s && !sent.includes(s)),
    );
    if (blamed[group]!.has(cell))
      for (const rows of moved[group]!) found.push({ leak: true, text: `a denied call changed ${rows}` });
    if (run.record(cell, found)) count++;
  }
  return count;
}

/**
 * Allowed cells, one at a time (the fresh targets they use up made side by side first): each
 * answers a success of its rule and does what the route says. Answers how many did.
 */
async function runAllowed(run: RouteRun): Promise<number> {
  const { exercise, fixture, context } = run;
  const allowed = await Promise.all(
    run.cells
      .filter((c) => c.expected.allowed)
      .map(async (cell) => {
        const { fresh } = fixture;
        const uses = fresh && cell.target && cell.target.owner !== cell.kind;
        return { ...cell, target: uses ? await fresh(cell.target!, cell.kind) : cell.target };
      }),
  );
  let count = 0;
  for (const cell of allowed) {
    const expected = cell.expected as Extract<Expected, { allowed: true }>;
    const since = new Date();
    const { reply } = await run.send(cell);
    const found: Finding[] = [];
    if (!expected.statuses.includes(reply.status)) {
      const said = `${reply.body?.code ?? ''} ${String(reply.body?.description ?? '').slice(0, 120)}`;
      found.push({ leak: false, text: `answered ${reply.status} ${said}, expected ${expected.statuses.join(' or ')}` });
    } else {
      const undone = await exercise.done?.(cell, reply, context, since);
      if (undone) found.push({ leak: false, text: `allowed, but ${undone}` });
      const shown = exercise.shows?.(cell, reply, context);
      if (shown) found.push({ leak: shown.startsWith('leak:'), text: shown });
    }
    if (run.record(cell, found)) count++;
  }
  return count;
}

function printTable(rows: RouteFigures[], summary: string): string {
  const line = (cells: (string | number)[]) =>
    `${String(cells[0]).padEnd(82)} ${cells
      .slice(1)
      .map((c) => String(c).padStart(9))
      .join(' ')}`;
  return [
    line(['route', 'cells', 'allowed', 'denied', 'leaks', 'unexpected', 'setup ms', 'cells ms']),
    ...rows.map((r) => line([r.key, r.cells, r.allowed, r.denied, r.leaks, r.unexpected, r.prepareMs, r.cellsMs])),
    summary,
  ].join('\n');
}

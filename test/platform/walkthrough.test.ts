import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { harness } from '../support/harness';
import { until } from '../support/money';
import { runScript } from '../support/scripts';

/**
 * The README's walkthrough ("From sign-up to a first loan"), run as written against the test
 * run's service: its shell blocks are read one command at a time (the few shell forms it uses:
 * assignments, `$(…)` with `jq -r` paths, `echo`, `curl` with -X, -H, -d, -G and
 * --data-urlencode, `npm run --silent <script> -- …`, `sleep`, which asking again replaces), and each answer shown in the JSON block
 * after a block is compared with what the block's last command printed: every field shown must
 * be there with that value, `"…"` any value but null. A read (GET) is asked again until it
 * answers as shown (a verdict, a payment, an onboarding arrive asynchronously), and a value read
 * into a variable by a GET until it is one not read before (a code texted after the last one).
 */

const ROOT = path.resolve(__dirname, '../..');
const TITLE = '## From sign-up to a first loan';

function walkthrough(): { kind: 'sh' | 'json'; text: string }[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`${TITLE}\n`);
  assert.ok(start >= 0, `the README has "${TITLE}"`);
  const end = readme.indexOf('\n## ', start + TITLE.length);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```(sh|json)\n([\s\S]*?)```/g)].map((m) => ({
    kind: m[1] as 'sh' | 'json',
    text: m[2]!,
  }));
}

type Vars = Map<string, string>;
/** A word of a command: its text, or a `$(…)` substitution's raw inside after a literal prefix. */
type Word = { text: string; sub?: string };
type Token = Word | '|';

/**
 * The next command of a shell text from `at`: its words with quotes removed and `$NAME`,
 * `${NAME}` and `${NAME:offset}` expanded (outside single quotes), `|` kept as a token.
 */
function nextCommand(text: string, at: number, vars: Vars): { tokens: Token[]; at: number } {
  const tokens: Token[] = [];
  let word: Word | undefined;
  const add = (chars: string) => (word = { text: (word?.text ?? '') + chars, sub: word?.sub });
  const finish = () => {
    if (word) tokens.push(word);
    word = undefined;
  };
  const expand = (i: number): [string, number] => {
    const braced = /^\$\{([A-Z_]+)(?::(\d+))?\}/.exec(text.slice(i));
    const bare = /^\$([A-Z_]+)/.exec(text.slice(i));
    const match = braced ?? bare;
    if (!match) return ['$', i + 1];
    const value = vars.get(match[1]!);
    assert.ok(value !== undefined, `$${match[1]} is set before it is used`);
    return [braced?.[2] ? value.slice(Number(braced[2])) : value, i + match[0].length];
  };
  let i = at;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\n' && tokens.length + (word ? 1 : 0) > 0) {
      finish();
      return { tokens, at: i + 1 };
    }
    if (c === '\\' && text[i + 1] === '\n') i += 2;
    else if (c === ' ' || c === '\t' || c === '\n') {
      finish();
      i++;
    } else if (c === '#' && !word) i = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
    else if (c === '|') {
      finish();
      tokens.push('|');
      i++;
    } else if (c === "'") {
      const close = text.indexOf("'", i + 1);
      add(text.slice(i + 1, close));
      i = close + 1;
    } else if (c === '"') {
      i++;
      while (text[i] !== '"') {
        if (text[i] === '$') {
          const [value, next] = expand(i);
          add(value);
          i = next;
        } else add(text[i++]!);
      }
      i++;
    } else if (c === '$' && text[i + 1] === '(') {
      // The raw inside, to its matching parenthesis (quotes respected).
      let depth = 0;
      let j = i + 1;
      let quote: string | undefined;
      for (; j < text.length; j++) {
        const d = text[j]!;
        if (quote) quote = d === quote ? undefined : quote;
        else if (d === "'" || d === '"') quote = d;
        else if (d === '(') depth++;
        else if (d === ')' && --depth === 0) break;
      }
      word = { text: word?.text ?? '', sub: text.slice(i + 2, j) };
      i = j + 1;
    } else if (c === '$') {
      const [value, next] = expand(i);
      add(value);
      i = next;
    } else add(text[i++]!);
  }
  finish();
  return { tokens, at: i };
}

const words = (tokens: Token[]) => tokens.map((t) => (t === '|' ? '|' : t.text));

/**
 * A jq program of the forms the walkthrough uses: paths (.a.b, .[-1], .[0:6] on a string) and
 * `map(select(.field | contains("text")))`, joined by `|`.
 */
function jqProgram(value: unknown, program: string): string {
  let current = value;
  // Its stages: split at the pipes outside parentheses.
  const stages = [''];
  let depth = 0;
  for (const c of program) {
    depth += c === '(' ? 1 : c === ')' ? -1 : 0;
    if (c === '|' && depth === 0) stages.push('');
    else stages[stages.length - 1] += c;
  }
  for (const stage of stages.slice(0, -1)) {
    const filter = /^map\(select\(\.(\w+) \| contains\("([^"]*)"\)\)\)$/.exec(stage.trim());
    assert.ok(filter, `a jq stage the walkthrough test reads: ${stage}`);
    current = (current as Record<string, unknown>[]).filter((item) => String(item[filter[1]!]).includes(filter[2]!));
  }
  return jqPath(current, stages.at(-1)!.trim());
}

function jqPath(value: unknown, expression: string): string {
  let current = value;
  for (const step of expression.matchAll(/\.([A-Za-z_]\w*)|\[(-?\d+)\]|\[(\d+):(\d+)\]|\./g)) {
    if (step[1]) current = (current as Record<string, unknown> | null)?.[step[1]];
    else if (step[2]) current = (current as unknown[]).at(Number(step[2]));
    else if (step[3]) current = typeof current === 'string' ? current.slice(Number(step[3]), Number(step[4])) : null;
  }
  return current === undefined || current === null
    ? 'null'
    : typeof current === 'string'
      ? current
      : JSON.stringify(current);
}

interface Ran {
  output: string;
  /** A read: asked again until its answer is as shown. */
  read: boolean;
}

async function curl(args: string[]): Promise<Ran> {
  let method = 'GET';
  let get = false;
  let body: string | undefined;
  let url: string | undefined;
  const headers: Record<string, string> = {};
  const query: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-s') continue;
    else if (arg === '-G') get = true;
    else if (arg === '-X') method = args[++i]!;
    else if (arg === '-H') {
      const [name, ...value] = args[++i]!.split(':');
      headers[name!.trim()] = value.join(':').trim();
    } else if (arg === '-d') body = args[++i];
    else if (arg === '--data-urlencode') {
      const [name, ...value] = args[++i]!.split('=');
      query.push(`${name}=${encodeURIComponent(value.join('='))}`);
    } else if (arg.startsWith('-')) assert.fail(`curl option ${arg} is not one the walkthrough test reads`);
    else url = arg;
  }
  assert.ok(url, 'curl has a URL');
  if (get) url += `${url.includes('?') ? '&' : '?'}${query.join('&')}`;
  const response = await fetch(url, { method, headers, body });
  return { output: await response.text(), read: method === 'GET' };
}

/** `npm run --silent <script> -- args`: the script's file from package.json, run with tsx as npm would. */
async function npmRun(args: string[]): Promise<Ran> {
  assert.deepEqual(args.slice(0, 2), ['run', '--silent']);
  const scripts = (
    JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  const file = /^tsx (\S+)$/.exec(scripts[args[2]!] ?? '')?.[1];
  assert.ok(file, `npm run ${args[2]} is a tsx script`);
  const ran = await runScript(file, args.slice(args.indexOf('--') + 1));
  assert.equal(ran.status, 0, `npm run ${args[2]}: ${ran.stderr}`);
  return { output: ran.stdout.trim(), read: false };
}

/** A pipeline: its first command's output through `jq -r <path>` stages. */
async function pipeline(tokens: Token[]): Promise<Ran> {
  const stages: string[][] = [[]];
  for (const token of words(tokens))
    if (token === '|') stages.push([]);
    else stages.at(-1)!.push(token);
  const [first, ...filters] = stages;
  let ran: Ran;
  if (first![0] === 'curl') ran = await curl(first!.slice(1));
  else if (first![0] === 'npm') ran = await npmRun(first!.slice(1));
  else if (first![0] === 'echo') ran = { output: first!.slice(1).join(' '), read: false };
  else assert.fail(`a command the walkthrough test does not run: ${first!.join(' ')}`);
  for (const filter of filters) {
    assert.deepEqual(filter.slice(0, 2), ['jq', '-r'], `a filter of the walkthrough: ${filter.join(' ')}`);
    ran = { ...ran, output: jqProgram(JSON.parse(ran.output), filter[2]!) };
  }
  return ran;
}

/** Whether `actual` holds every field `shown` shows: the same value, or any non-null one for "…". */
function matches(actual: unknown, shown: unknown): boolean {
  if (shown === '…') return actual !== null && actual !== undefined;
  if (Array.isArray(shown))
    return Array.isArray(actual) && actual.length === shown.length && shown.every((s, i) => matches(actual[i], s));
  if (shown && typeof shown === 'object')
    return (
      !!actual &&
      typeof actual === 'object' &&
      Object.entries(shown).every(([key, value]) => matches((actual as Record<string, unknown>)[key], value))
    );
  return actual === shown;
}

describe('README: from sign-up to a first loan, run as written', () => {
  it('a customer made with user create reaches an approved KYC, an active current account, a deposit, a first loan and a phone change through the API; every answer shown is what the service answers', async function () {
    this.timeout(240_000);
    const { baseUrl, config } = harness();
    // Where the walkthrough's npm start listens, here the test run's API and SMS simulator.
    const places: Record<string, string> = { API: baseUrl, SMS: config.SMS_PROVIDER_URL! };
    const vars: Vars = new Map();
    const readValues = new Set<string>();
    const blocks = walkthrough();
    assert.ok(blocks.filter((b) => b.kind === 'sh').length >= 8, 'the walkthrough has its steps');
    let shown: { command: Token[]; output: string } | undefined;
    let commands = 0;
    for (const block of blocks) {
      if (block.kind === 'json') {
        assert.ok(shown, 'an answer follows a command that prints one');
        const expected: unknown = JSON.parse(block.text);
        const last = shown;
        const check = (output: string) => {
          const actual: unknown = JSON.parse(output);
          return matches(actual, expected) ? actual : undefined;
        };
        const isRead = words(last.command)[0] === 'curl' && !words(last.command).includes('-X');
        const answer = isRead
          ? await until(
              `${words(last.command).join(' ').slice(0, 120)} answers ${block.text}`,
              () =>
                pipeline(last.command).then(
                  (ran) => check(ran.output),
                  () => undefined,
                ),
              30_000,
              200,
            )
          : check(last.output);
        assert.ok(
          answer,
          `${words(last.command).join(' ').slice(0, 160)}\nanswered ${last.output}\nnot as shown ${block.text}`,
        );
        shown = undefined;
        continue;
      }
      for (let at = 0; ;) {
        const next = nextCommand(block.text, at, vars);
        at = next.at;
        if (next.tokens.length === 0) break;
        commands++;
        const [head] = next.tokens as Word[];
        // The walkthrough's sleeps give a reader's asynchronous answers time; this run asks again instead.
        if (head!.text === 'sleep') continue;
        const assignment = /^([A-Z_]+)=/.exec(head!.text);
        if (assignment && next.tokens.length === 1) {
          const name = assignment[1]!;
          if (head!.sub === undefined) {
            vars.set(name, places[name] ?? head!.text.slice(assignment[0].length));
            continue;
          }
          const inner = nextCommand(head!.sub, 0, vars).tokens;
          // A read into a variable is asked again until it is a value not read before (a new code).
          const value = await until(
            `${name} read`,
            () =>
              pipeline(inner).then(
                (ran) => (ran.read && (ran.output === 'null' || readValues.has(ran.output)) ? undefined : ran.output),
                () => undefined,
              ),
            30_000,
            200,
          );
          if (words(inner)[0] === 'curl' && !words(inner).includes('-X')) readValues.add(value);
          vars.set(name, value);
          continue;
        }
        shown = { command: next.tokens, output: (await pipeline(next.tokens)).output };
      }
    }
    assert.ok(commands >= 20, `the walkthrough ran (${commands} commands)`);
    // What the walkthrough did, as Postgres has it.
    const { db } = harness();
    const user = await db('users')
      .where({ email: vars.get('EMAIL') })
      .first();
    assert.equal(user.phone_number, vars.get('NEW_PHONE'), 'the phone changed');
    const current = await db('accounts')
      .where({ id: vars.get('CURRENT') })
      .first();
    assert.equal(current.status, 'ACTIVE');
    assert.ok(current.bank_customer_id && current.bank_account_number);
    assert.equal((await db('loans').where({ user_id: user.id })).length, 1, 'one loan');
  });
});

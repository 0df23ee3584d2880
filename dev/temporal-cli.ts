import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Takes the build lock: a file created exclusively, holding the builder's pid. A lock left by a
 * process that no longer runs is taken over; otherwise we wait for the other build to finish.
 */
async function withBuildLock<T>(dir: string, log: (line: string) => void, work: () => Promise<T>): Promise<T> {
  const lockFile = path.join(dir, 'build.lock');
  let announced = false;
  for (;;) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(holder) && holder > 0 && !processAlive(holder)) {
        await rm(lockFile, { force: true });
        continue;
      }
      if (!announced) log(`waiting for another build of the Temporal CLI (lock ${lockFile})`);
      announced = true;
      await sleep(2_000);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lockFile, { force: true });
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

import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import lockfile from 'proper-lockfile';

/**
 * The servers the service needs locally and that are Go programs (the Temporal CLI, the
 * S3-compatible object store), found or built the same way: an explicit path, the binary on
 * PATH, our cached build, or a fresh `go install` into the cache, once per machine, under a lock.
 */
export interface GoTool {
  /** The binary's name (on PATH and in the cache). */
  binary: string;
  /** The name `go install` gives it, when that differs (the Temporal server's `cmd/server` is `server`). */
  installs?: string;
  /** `module/cmd@version`, as `go install` takes it. */
  module: string;
  /** The cache folder's name under ~/.cache/lending-service. */
  cacheName: string;
  /** What a build costs, for the log line. */
  buildNote: string;
  /** The setting an explicit path comes from, for errors. */
  setting: string;
}

const run = promisify(execFile);

export function goToolCacheDir(tool: Pick<GoTool, 'cacheName'>): string {
  const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cacheHome, 'lending-service', tool.cacheName);
}

export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

export async function onPath(name: string): Promise<string | undefined> {
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
async function withBuildLock<T>(
  tool: GoTool,
  dir: string,
  log: (line: string) => void,
  work: () => Promise<T>,
): Promise<T> {
  const options = { lockfilePath: path.join(dir, 'build.lock'), realpath: false, stale: 30_000 };
  if (await lockfile.check(dir, options))
    log(`waiting for another build of ${tool.binary} (lock ${options.lockfilePath})`);
  const release = await lockfile.lock(dir, {
    ...options,
    retries: { forever: true, minTimeout: 1_000, maxTimeout: 2_000, factor: 1 },
    onCompromised: (error) => log(`${tool.binary} build lock lost: ${error.message}`),
  });
  try {
    return await work();
  } finally {
    await release();
  }
}

async function buildWithGo(tool: GoTool, dir: string, binary: string, log: (line: string) => void): Promise<string> {
  await mkdir(dir, { recursive: true });
  return withBuildLock(tool, dir, log, async () => {
    if (await isExecutable(binary)) return binary; // built by whoever held the lock before us
    log(`building ${tool.module} with Go into ${dir}: ${tool.buildNote}, once per machine`);
    // Build into a private folder, then rename: a half-written binary is never found.
    const staging = path.join(dir, `staging-${process.pid}`);
    await rm(staging, { recursive: true, force: true });
    try {
      await run('go', ['install', tool.module], {
        env: { ...process.env, GOBIN: staging },
        maxBuffer: 64 * 1024 * 1024,
      });
      await rename(path.join(staging, tool.installs ?? tool.binary), binary);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    log(`built ${binary}`);
    return binary;
  });
}

/** The tool's binary: explicit, on PATH, cached, or built now; undefined when there is no Go to build it with. */
export async function findGoTool(
  tool: GoTool,
  options: { explicitPath?: string; log?: (line: string) => void } = {},
): Promise<string | undefined> {
  const log = options.log ?? ((line: string) => console.error(line));
  if (options.explicitPath) {
    if (await isExecutable(options.explicitPath)) return options.explicitPath;
    throw new Error(`${tool.setting}=${options.explicitPath} is not an executable file`);
  }
  const found = await onPath(tool.binary);
  if (found) return found;
  const dir = goToolCacheDir(tool);
  const cached = path.join(dir, tool.binary);
  if (await isExecutable(cached)) return cached;
  if (await onPath('go')) return buildWithGo(tool, dir, cached, log);
  return undefined;
}

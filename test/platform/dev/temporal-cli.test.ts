import { strict as assert } from 'node:assert';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findTemporalCli, temporalCliCacheDir } from '../../../dev/temporal-cli';

/** Runs `work` with some environment variables replaced, then puts them back. */
async function withEnv<T>(vars: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await work();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function fakeBinary(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'temporal');
  await writeFile(file, '#!/bin/sh\necho fake\n');
  await chmod(file, 0o755);
  return file;
}

describe('finding the Temporal CLI', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'lending-cli-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('takes TEMPORAL_CLI_PATH first, and refuses one that is not executable', async () => {
    const explicit = await fakeBinary(path.join(root, 'explicit'));
    const onPath = await fakeBinary(path.join(root, 'bin'));
    await withEnv({ PATH: path.dirname(onPath) }, async () => {
      assert.equal(await findTemporalCli({ explicitPath: explicit }), explicit);
      await assert.rejects(findTemporalCli({ explicitPath: path.join(root, 'missing') }), /TEMPORAL_CLI_PATH/);
    });
  });

  it('then `temporal` on PATH', async () => {
    const onPath = await fakeBinary(path.join(root, 'bin'));
    await withEnv({ PATH: path.dirname(onPath), XDG_CACHE_HOME: path.join(root, 'cache') }, async () => {
      assert.equal(await findTemporalCli(), onPath);
    });
  });

  it('then the cached build under the user cache folder', async () => {
    await withEnv({ PATH: path.join(root, 'empty'), XDG_CACHE_HOME: path.join(root, 'cache') }, async () => {
      const cached = await fakeBinary(temporalCliCacheDir());
      assert.ok(cached.startsWith(path.join(root, 'cache')));
      assert.equal(await findTemporalCli(), cached);
    });
  });

  it('else builds it with Go once, under a lock, into a staging name then renamed', async function () {
    this.timeout(30_000);
    // A stand-in `go` that "installs" a binary into GOBIN slowly and counts its runs.
    const bin = path.join(root, 'bin');
    await mkdir(bin, { recursive: true });
    const counter = path.join(root, 'go-runs');
    await writeFile(
      path.join(bin, 'go'),
      `#!/bin/sh\necho "$@" >> ${counter}\nsleep 1\nmkdir -p "$GOBIN"\nprintf '#!/bin/sh\\n' > "$GOBIN/temporal"\nchmod +x "$GOBIN/temporal"\n`,
    );
    await chmod(path.join(bin, 'go'), 0o755);
    const lines: string[] = [];
    await withEnv({ PATH: `${bin}:/usr/bin:/bin`, XDG_CACHE_HOME: path.join(root, 'cache') }, async () => {
      // A lock left by a process that is gone (stale: not refreshed for minutes) must not block the build.
      const staleLock = path.join(temporalCliCacheDir(), 'build.lock');
      await mkdir(staleLock, { recursive: true });
      const longAgo = new Date(Date.now() - 10 * 60_000);
      await utimes(staleLock, longAgo, longAgo);
      const log = (line: string) => lines.push(line);
      const [a, b] = await Promise.all([findTemporalCli({ log }), findTemporalCli({ log })]);
      const expected = path.join(temporalCliCacheDir(), 'temporal');
      assert.equal(a, expected);
      assert.equal(b, expected);
      assert.deepEqual(await readdir(temporalCliCacheDir()), ['temporal'], 'no lock or staging folder left behind');
    });
    assert.deepEqual((await readFile(counter, 'utf8')).trim().split('\n'), [
      'install github.com/temporalio/cli/cmd/temporal@v1.5.1',
    ]);
    assert.match(lines.join('\n'), /about 4 minutes and 2 GB/);
  });

  it('else, without Go either, leaves the download to the SDK', async () => {
    const lines: string[] = [];
    await withEnv({ PATH: path.join(root, 'empty'), XDG_CACHE_HOME: path.join(root, 'cache') }, async () => {
      assert.equal(await findTemporalCli({ log: (line) => lines.push(line) }), undefined);
    });
    assert.match(lines.join('\n'), /SDK will download/);
  });
});

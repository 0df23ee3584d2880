import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { findGoTool, type GoTool } from './go-tools';

/**
 * The S3-compatible object store for `npm start`, the tests and CI: versitygw (Apache-2.0) on its
 * POSIX backend, found like the Temporal CLI (OBJECT_STORE_BIN, PATH, the cache, or a `go install`
 * once per machine, about 2 minutes).
 *
 * Why versitygw: it checks Signature V4 on presigned URLs the way S3 does, the signed headers
 * included. A presigned PUT whose Content-Type or Content-Length differ from the signed ones, to
 * another key, or after its expiry is refused by the store itself (test/financing/object-store
 * checks each). MinIO builds from Go modules too but is far heavier to build; s3rver (npm) is
 * unmaintained and does not verify presigned signatures. One difference: S3 verifies an
 * `x-amz-checksum-*` value carried in a presigned URL's query, versitygw does not; our client
 * never puts one there (see providers/storage), so both stores behave alike.
 */
export const VERSITYGW_VERSION = 'v1.8.0';
const VERSITYGW: GoTool = {
  binary: 'versitygw',
  module: `github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}`,
  cacheName: `versitygw-${VERSITYGW_VERSION}`,
  buildNote: 'about 2 minutes on 2 cores',
  setting: 'OBJECT_STORE_BIN',
};

export async function findObjectStoreServer(options: { explicitPath?: string; log?: (line: string) => void } = {}) {
  const found = await findGoTool(VERSITYGW, options);
  if (!found)
    throw new Error(
      'no S3-compatible object store: install versitygw (or Go, to build it), set OBJECT_STORE_BIN, or point OBJECT_STORE_ENDPOINT at a store',
    );
  return found;
}

export interface RunningObjectStore {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts versitygw on 127.0.0.1:`port` over `dataDir` (a bucket is a folder there) with one root
 * credential, passed in its environment (never on the command line, where `ps` shows it).
 */
export async function startObjectStore(options: {
  binary: string;
  dataDir: string;
  port: number;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  log?: (line: string) => void;
}): Promise<RunningObjectStore> {
  await mkdir(options.dataDir, { recursive: true });
  const child = spawn(
    options.binary,
    ['--port', `127.0.0.1:${options.port}`, '--region', options.region, 'posix', options.dataDir],
    {
      env: {
        PATH: process.env.PATH,
        ROOT_ACCESS_KEY_ID: options.accessKeyId,
        ROOT_SECRET_ACCESS_KEY: options.secretAccessKey,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output = (output + chunk).slice(-4_000)));
  child.stderr.on('data', (chunk) => (output = (output + chunk).slice(-4_000)));
  const exited = once(child, 'exit');
  const endpoint = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the object store exited (${child.exitCode}):\n${output}`);
    try {
      await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
      break; // any answer (an anonymous request is refused) means it listens
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the object store did not listen on ${endpoint}:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    endpoint,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `npm run --silent object-store`: finds or builds versitygw and prints its path (CI warms the cache with it). */
if (require.main === module) {
  findObjectStoreServer({ explicitPath: process.env.OBJECT_STORE_BIN || undefined })
    .then((found) => console.log(found))
    .catch((error) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    });
}

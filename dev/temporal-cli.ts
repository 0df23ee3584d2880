import { findGoTool, goToolCacheDir } from './go-tools';

/**
 * Finds the Temporal CLI (dev server + Web UI) for tests and `npm start`, in this order:
 * TEMPORAL_CLI_PATH, `temporal` on PATH, our cached build, a fresh build with Go, and finally
 * nothing, in which case the SDK downloads one (machines with internet only).
 *
 * v1.5.1 is the newest tag that `go install` can build: later tags carry a replace directive.
 */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const TEMPORAL_CLI = {
  binary: 'temporal',
  module: `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`,
  cacheName: `temporal-cli-${TEMPORAL_CLI_VERSION}`,
  buildNote: 'about 4 minutes and 2 GB of memory on 2 cores',
  setting: 'TEMPORAL_CLI_PATH',
};

export const temporalCliCacheDir = () => goToolCacheDir(TEMPORAL_CLI);

export interface FindOptions {
  /** TEMPORAL_CLI_PATH, when set. */
  explicitPath?: string;
  log?: (line: string) => void;
}

/** The path of a Temporal CLI binary, or undefined when the SDK must download one. */
export async function findTemporalCli(options: FindOptions = {}): Promise<string | undefined> {
  const found = await findGoTool(TEMPORAL_CLI, options);
  if (!found)
    (options.log ?? ((line: string) => console.error(line)))(
      'no Temporal CLI and no Go toolchain here: the Temporal SDK will download the dev server',
    );
  return found;
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

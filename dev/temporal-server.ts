import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { findTemporalCli } from './temporal-cli';

export interface DevServerOptions {
  cliPath?: string;
  namespace?: string;
  /** Fixed ports for `npm start`; tests leave them out and get free ones. */
  port?: number;
  uiPort?: number;
  /** SQLite file that persists the server's state across starts; in memory when omitted. */
  dbFilename?: string;
  /** Dynamic config values (`--dynamic-config-value key=JSON`), e.g. a low continue-as-new suggestion for a suite. */
  dynamicConfig?: Record<string, unknown>;
  log?: (line: string) => void;
}

/**
 * Starts a Temporal dev server (the CLI's `server start-dev`) through the SDK, which owns the
 * child process and stops it on teardown. Used by the test harness and by `npm start`, with the
 * custom search attributes registered either way.
 */
export async function startTemporalDevServer(options: DevServerOptions = {}): Promise<TestWorkflowEnvironment> {
  const path = await findTemporalCli({ explicitPath: options.cliPath, log: options.log });
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: path ? { type: 'existing-path', path } : { type: 'cached-download' },
      namespace: options.namespace,
      ip: '127.0.0.1',
      port: options.port,
      ui: options.uiPort !== undefined,
      uiPort: options.uiPort,
      dbFilename: options.dbFilename,
      searchAttributes: SEARCH_ATTRIBUTES,
      log: { format: 'json', level: 'error' },
      extraArgs: Object.entries(options.dynamicConfig ?? {}).flatMap(([key, value]) => [
        '--dynamic-config-value',
        `${key}=${JSON.stringify(value)}`,
      ]),
    },
  });
}

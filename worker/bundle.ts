import { readFile, writeFile } from 'node:fs/promises';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';

/** The production workflow entry point. */
export const WORKFLOWS_PATH = require.resolve('../workflows');

/**
 * Bundles workflow code once per process (webpack, a few seconds); every Worker of the process
 * reuses the bundle instead of bundling on create.
 */
export async function bundleWorkflows(workflowsPath = WORKFLOWS_PATH): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath,
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error: (m, meta) => console.error(m, meta), log() {} },
  });
}

/** The worker's bundle: the one built beforehand at `path` when given, else bundled now. */
export async function workerBundle(path: string | undefined): Promise<WorkflowBundle> {
  return path ? { code: await readFile(path, 'utf8') } : bundleWorkflows();
}

/** `npm run bundle -- <file>`: bundles the production workflows into a file for WORKFLOW_BUNDLE_PATH. */
if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: npm run bundle -- <file>');
  bundleWorkflows()
    .then((bundle) => writeFile(file, bundle.code))
    .then(
      () => console.log(file),
      (error) => {
        console.error(error instanceof Error ? error.message : error);
        process.exit(1);
      },
    );
}

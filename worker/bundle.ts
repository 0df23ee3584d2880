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

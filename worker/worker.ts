import { NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { ActivityDeps } from '../activities/deps';

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  workflowBundle: WorkflowBundle;
  /** How long in-flight activities get to finish on shutdown before they are cancelled. */
  shutdownGraceTimeMs: number;
  /** Activities beyond the service's own; the test harness adds test-only ones here. */
  extraActivities?: object;
}

/** The service's Worker: every workflow in the bundle and every activity from createActivities. */
export function createWorker(options: WorkerOptions, deps: ActivityDeps): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: options.workflowBundle,
    activities: { ...createActivities(deps), ...options.extraActivities },
    shutdownGraceTime: options.shutdownGraceTimeMs,
  });
}

export { NativeConnection };

import { NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { ActivityDeps } from '../activities/deps';
import { webhookTaskQueue } from '../workflows/webhooks/messages';

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

/** The service's workers in one process, run and stopped together. */
export interface ServiceWorker {
  /** Resolves once both have stopped; rejects (after stopping the other) when either fails. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * The service's Worker (every workflow in the bundle, every activity from createActivities) and,
 * beside it, the webhook deliveries' own: only their attempts, on WEBHOOK_TASK_QUEUE with
 * WEBHOOK_ACTIVITY_SLOTS slots, so receivers never hold the slots money and identity steps need.
 */
export async function createWorker(options: WorkerOptions, deps: ActivityDeps): Promise<ServiceWorker> {
  const activities = { ...createActivities(deps), ...options.extraActivities };
  const common = {
    connection: options.connection,
    namespace: options.namespace,
    shutdownGraceTime: options.shutdownGraceTimeMs,
  };
  const service = await Worker.create({
    ...common,
    taskQueue: options.taskQueue,
    workflowBundle: options.workflowBundle,
    activities,
  });
  const webhooks = await Worker.create({
    ...common,
    taskQueue: webhookTaskQueue({ ...deps.config, TEMPORAL_TASK_QUEUE: options.taskQueue }),
    activities: { attemptWebhookDelivery: activities.attemptWebhookDelivery },
    maxConcurrentActivityTaskExecutions: deps.config.WEBHOOK_ACTIVITY_SLOTS,
  });
  const workers = [service, webhooks];
  const shutdown = () => {
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    async run() {
      const runs = workers.map((worker) =>
        worker.run().catch((error: unknown) => {
          shutdown();
          throw error;
        }),
      );
      const results = await Promise.allSettled(runs);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
    shutdown,
  };
}

export { NativeConnection };

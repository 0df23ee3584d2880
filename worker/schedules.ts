import { type Client, ScheduleNotFoundError, type ScheduleOptions } from '@temporalio/client';
import type { Config } from '../config';
import { scheduleIds } from '../workflows/ids';

/**
 * Ensures the Temporal Schedules of the service, idempotently, each time a worker starts:
 * update first (so a changed interval takes effect), create when there is none.
 */
export async function ensureSchedules(client: Client, config: Config): Promise<void> {
  const schedules: ScheduleOptions[] = [
    {
      scheduleId: scheduleIds.kycExpirySweep,
      spec: { intervals: [{ every: config.KYC_EXPIRY_SWEEP_INTERVAL }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'kycExpirySweepAll',
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ batchSize: config.KYC_SWEEP_BATCH_SIZE }],
      },
      // A run still going when the next is due is not doubled (both schedules).
      policies: { overlap: 'SKIP' },
    },
    {
      scheduleId: scheduleIds.callbackRetention,
      spec: { intervals: [{ every: config.CALLBACK_PURGE_INTERVAL }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'callbackRetention',
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ retentionMs: config.CALLBACK_RETENTION }],
      },
      policies: { overlap: 'SKIP' },
    },
  ];
  for (const schedule of schedules) {
    const handle = client.schedule.getHandle(schedule.scheduleId);
    try {
      await handle.update((previous) => ({ ...previous, spec: schedule.spec, action: schedule.action, policies: { ...previous.policies, overlap: 'SKIP' } }));
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
      await client.schedule.create(schedule);
    }
  }
}

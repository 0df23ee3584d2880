import { type Client, ScheduleAlreadyRunning, ScheduleNotFoundError, type ScheduleOptions } from '@temporalio/client';
import type { Config } from '../../config';
import { scheduleIds } from '../../workflows/ids';

/**
 * Ensures the Temporal Schedules of the service, idempotently, each time a worker starts:
 * update first (so a changed interval takes effect), create when there is none; any number of
 * workers may start together.
 */
export async function ensureSchedules(client: Client, config: Config): Promise<void> {
  // Each starts one workflow every interval; a run still going when the next is due is not doubled.
  const every = (scheduleId: string, interval: number, workflowType: string, args: unknown[]): ScheduleOptions => ({
    scheduleId,
    spec: { intervals: [{ every: interval }] },
    action: { type: 'startWorkflow', workflowType, taskQueue: config.TEMPORAL_TASK_QUEUE, args },
    policies: { overlap: 'SKIP' },
  });
  const schedules = [
    every(scheduleIds.kycExpirySweep, config.KYC_EXPIRY_SWEEP_INTERVAL, 'kycExpirySweepAll', [
      { batchSize: config.KYC_SWEEP_BATCH_SIZE },
    ]),
    every(scheduleIds.callbackRetention, config.CALLBACK_PURGE_INTERVAL, 'callbackRetention', [
      { retentionMs: config.CALLBACK_RETENTION },
    ]),
    every(scheduleIds.idempotencyKeyPurge, config.IDEMPOTENCY_PURGE_INTERVAL, 'idempotencyKeyPurge', []),
    every(scheduleIds.repaymentReconciliation, config.REPAYMENT_RECONCILIATION_INTERVAL, 'repaymentReconciliation', [
      { graceMs: config.REPAYMENT_RECONCILIATION_GRACE, lookbackMs: config.REPAYMENT_RECONCILIATION_LOOKBACK },
    ]),
  ];
  for (const schedule of schedules) {
    const handle = client.schedule.getHandle(schedule.scheduleId);
    const update = () =>
      handle.update((previous) => ({
        ...previous,
        spec: schedule.spec,
        action: schedule.action,
        policies: { ...previous.policies, overlap: 'SKIP' },
      }));
    try {
      await update();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
      // Several workers start at once: the one whose create loses updates what the winner made.
      await client.schedule.create(schedule).catch(async (raced: unknown) => {
        if (!(raced instanceof ScheduleAlreadyRunning)) throw raced;
        await update();
      });
    }
  }
}

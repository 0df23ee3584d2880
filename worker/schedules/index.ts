import { type Client, ScheduleAlreadyRunning, ScheduleNotFoundError, type ScheduleOptions } from '@temporalio/client';
import type { Config } from '../../config';
import { scheduleIds } from '../../workflows/ids';

/**
 * Ensures the Temporal Schedules of the service, idempotently, each time a worker starts:
 * update first (so a changed interval takes effect), create when there is none; any number of
 * workers may start together.
 */
export async function ensureSchedules(client: Client, config: Config): Promise<void> {
  // Each starts one workflow every interval; a run still going when the next is due is not doubled
  // (SKIP), or, for a run that lasts its whole interval on purpose, followed at once (BUFFER_ONE).
  const every = (
    scheduleId: string,
    interval: number,
    workflowType: string,
    args: unknown[],
    overlap: 'SKIP' | 'BUFFER_ONE' = 'SKIP',
  ) =>
    ({
      scheduleId,
      spec: { intervals: [{ every: interval }] },
      action: { type: 'startWorkflow', workflowType, taskQueue: config.TEMPORAL_TASK_QUEUE, args },
      policies: { overlap },
    }) satisfies ScheduleOptions;
  const schedules = [
    every(scheduleIds.kycExpirySweep, config.KYC_EXPIRY_SWEEP_INTERVAL, 'kycExpirySweepAll', [
      { batchSize: config.KYC_SWEEP_BATCH_SIZE },
    ]),
    every(scheduleIds.callbackRetention, config.CALLBACK_PURGE_INTERVAL, 'callbackRetention', [
      { retentionMs: config.CALLBACK_RETENTION },
    ]),
    every(scheduleIds.idempotencyKeyPurge, config.IDEMPOTENCY_PURGE_INTERVAL, 'idempotencyKeyPurge', []),
    every(scheduleIds.webhookEventRetention, config.WEBHOOK_EVENT_PURGE_INTERVAL, 'webhookEventRetention', [
      { retentionMs: config.WEBHOOK_EVENT_RETENTION },
    ]),
    every(scheduleIds.repaymentReconciliation, config.REPAYMENT_RECONCILIATION_INTERVAL, 'repaymentReconciliation', [
      { graceMs: config.REPAYMENT_RECONCILIATION_GRACE, lookbackMs: config.REPAYMENT_RECONCILIATION_LOOKBACK },
    ]),
    // The outbox relay listens for its whole interval; the next run takes over as it ends.
    every(
      scheduleIds.webhookDispatch,
      config.WEBHOOK_DISPATCH_INTERVAL,
      'webhookDispatch',
      [{ listenMs: config.WEBHOOK_DISPATCH_INTERVAL }],
      'BUFFER_ONE',
    ),
  ];
  for (const schedule of schedules) {
    const handle = client.schedule.getHandle(schedule.scheduleId);
    const update = () =>
      handle.update((previous) => ({
        ...previous,
        spec: schedule.spec,
        action: schedule.action,
        policies: { ...previous.policies, overlap: schedule.policies.overlap },
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
  // The outbox relay runs from the start, not an interval later: behind one still running, the
  // buffered trigger only queues the next (BUFFER_ONE holds one).
  await client.schedule.getHandle(scheduleIds.webhookDispatch).trigger();
}

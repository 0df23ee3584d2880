/**
 * Messages of the platform's scheduled workflows (callback retention, idempotency-key purge):
 * their inputs, importable by the worker's schedules without the workflows' bodies.
 */

export interface CallbackRetentionInput {
  /** Raw callbacks received longer ago than this are deleted. */
  retentionMs: number;
}

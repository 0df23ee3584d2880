import { ApplicationFailure } from '@temporalio/common';
import type { Clock } from '../../domain/clock';
import { SelfServiceFailure } from '../../workflows/current-account/messages';

/** What the self-service steps share: a provider or key they need, and a run's row transition. */

const notConfigured = (what: string) =>
  ApplicationFailure.nonRetryable(`${what} is not configured`, SelfServiceFailure.NOT_CONFIGURED);

/** A provider or key the step needs; without it the run cannot go on (NOT_CONFIGURED, final). */
export function needed<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw notConfigured(what);
  return value;
}

/** A run's progress as its row records it, now; a rejection always with its reason. */
export function transition<S extends string>(clock: Clock, input: { status: S | 'REJECTED'; reason?: string }) {
  const at = clock.now();
  return input.status === 'REJECTED'
    ? { status: 'REJECTED' as const, at, reason: input.reason ?? 'REJECTED' }
    : { status: input.status as Exclude<S, 'REJECTED'>, at };
}

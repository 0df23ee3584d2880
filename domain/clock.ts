/** The time source of API and activity code, injected so tests can pin it. Workflows use Temporal's time. */
export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

/**
 * A run's local activities, started one at a time in call order (each after the previous one
 * settled), whoever calls them: the run's main loop or any number of its message handlers.
 *
 * Why: the SDK's core replays every local-activity result one workflow task recorded in a single
 * activation, while live they may have reached the run in several, with the run's other code
 * running in between (a main loop woken by the first result cancels its timer and schedules an
 * activity before the second result arrives). Two local activities in flight at once can thus
 * leave a history the same code does not replay ("Update machine does not handle this event").
 * One at a time, every result has an activation to itself, live and in replay alike.
 *
 * Create one per run, inside the workflow function: a module-level queue would be shared.
 */
export function oneAtATime<T extends object>(activities: T): T {
  let previous: Promise<unknown> = Promise.resolve();
  return new Proxy(activities, {
    get(target, name) {
      const step = Reflect.get(target, name) as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const started = previous.then(() => step(...args));
        previous = started.catch(() => undefined);
        return started;
      };
    },
  });
}

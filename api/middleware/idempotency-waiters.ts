import type { Context } from 'koa';
import type { KeyRow } from '../../db/idempotency/keys';

/**
 * Retries of this instance waiting on a key another request of this instance executes, woken the
 * moment it stores or releases the key; a retry waiting on another instance's execution finds out
 * by reading the row again (its poll).
 */
export function keyWaiters() {
  const waiting = new Map<string, Set<() => void>>();
  const reads = new Map<string, Promise<KeyRow | undefined>>();
  const nameOf = (scope: string, key: string) => JSON.stringify([scope, key]);
  return {
    /** The key's row, read once for every waiter asking at the same moment. */
    read(scope: string, key: string, load: () => Promise<KeyRow | undefined>): Promise<KeyRow | undefined> {
      const name = nameOf(scope, key);
      let pending = reads.get(name);
      if (!pending) {
        pending = load().finally(() => reads.delete(name));
        reads.set(name, pending);
      }
      return pending;
    },
    /** Retries of this instance waiting on the key now. */
    count: (scope: string, key: string) => waiting.get(nameOf(scope, key))?.size ?? 0,
    /** The key's execution here has ended (answer stored, or key released): its waiters look again. */
    settled(scope: string, key: string) {
      const name = nameOf(scope, key);
      const wakers = waiting.get(name);
      waiting.delete(name);
      for (const wake of wakers ?? []) wake();
    },
    /** Resolves after `ms`, or sooner when the key's local executor settles it or the client goes away. */
    pause(ctx: Context, scope: string, key: string, ms: number): Promise<void> {
      return new Promise((resolve) => {
        const name = nameOf(scope, key);
        const wakers = waiting.get(name) ?? new Set();
        waiting.set(name, wakers);
        const done = () => {
          clearTimeout(timer);
          wakers.delete(done);
          if (wakers.size === 0 && waiting.get(name) === wakers) waiting.delete(name);
          ctx.res.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        wakers.add(done);
        // The response closes before it is sent only when the client has gone away.
        ctx.res.once('close', done);
      });
    },
  };
}

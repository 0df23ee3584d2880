/**
 * Runs `work` over `items` with at most `limit` calls in flight, and settles when all have.
 * The first failure rejects (after the in-flight calls finish), as Promise.all would.
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, runner));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Group commit: `write` takes many items at once (one multi-row insert, one commit) and each
 * caller's promise settles when the write holding its item has. An item waits only while
 * `maxInFlight` writes are already running, so a lone caller pays no delay and callers under
 * load share commits. A failed group is written again item by item, so one bad item fails only
 * its own caller.
 */
export function groupCommits<T>(
  write: (items: T[]) => Promise<void>,
  options: { maxBatch: number; maxInFlight: number },
): (item: T) => Promise<void> {
  let queue: { item: T; settle: (error?: unknown) => void }[] = [];
  let inFlight = 0;

  async function flush(batch: typeof queue) {
    try {
      await write(batch.map((entry) => entry.item));
      for (const entry of batch) entry.settle();
    } catch (error) {
      if (batch.length === 1) batch[0]!.settle(error);
      else
        await Promise.all(
          batch.map((entry) =>
            write([entry.item]).then(
              () => entry.settle(),
              (itemError: unknown) => entry.settle(itemError),
            ),
          ),
        );
    }
  }

  function drain() {
    while (inFlight < options.maxInFlight && queue.length > 0) {
      const batch = queue.slice(0, options.maxBatch);
      queue = queue.slice(batch.length);
      inFlight += 1;
      void flush(batch).finally(() => {
        inFlight -= 1;
        drain();
      });
    }
  }

  return (item) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      drain();
    });
}

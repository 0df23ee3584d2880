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

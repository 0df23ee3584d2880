/**
 * Seeded randomness for the chaos suites: the same seed gives the same requests, kills, deliveries
 * and order, so a failing run can be run again as it was.
 */

/** mulberry32: a small, fast 32-bit generator; uniform in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [0, n). */
export const below = (next: () => number, n: number) => Math.floor(next() * n);

/** A copy of `items` in a seeded random order (Fisher–Yates). */
export function shuffled<T>(next: () => number, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = below(next, i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Durations in configuration are written as an integer and a unit (`250ms`, `30s`, `15m`, `1h`,
 * `2d`) and held as milliseconds. Deliberately strict: a typo such as `15 min` must stop start-up
 * rather than silently become a different value.
 */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+)(ms|s|m|h|d)$/;

export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** Parses a byte size such as `100kb`, `15mb` or `2048` into bytes. */
const SIZE = /^(\d+)(b|kb|mb)?$/i;
const SIZE_UNIT = { b: 1, kb: 1024, mb: 1024 * 1024 } as const;

export function parseByteSize(text: string): number | undefined {
  const match = SIZE.exec(text.trim());
  if (!match) return undefined;
  const unit = (match[2]?.toLowerCase() ?? 'b') as keyof typeof SIZE_UNIT;
  const value = Number(match[1]) * SIZE_UNIT[unit];
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

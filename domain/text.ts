/**
 * Text that Postgres, JSON and the logs can all carry. Postgres refuses NUL in text and jsonb,
 * and a lone UTF-16 surrogate has no UTF-8 encoding: either would fail deep inside a query or a
 * workflow step instead of at the edge. Pure: safe in workflows and zod schemas alike.
 */
const wellFormed = (value: string) => (value as string & { isWellFormed(): boolean }).isWellFormed();

/** Why a string cannot be stored as is, or undefined when it can. */
export function unstorableText(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character';
  if (!wellFormed(value)) return 'contains a lone UTF-16 surrogate';
  return undefined;
}

/**
 * A JSON value as text, when it is text or a finite number: never String() of a parsed object
 * (`{"toString": 1}` makes that throw). Undefined for anything else.
 */
export const jsonText = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;

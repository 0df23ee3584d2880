/**
 * The identifiers the service checks in several places, checked one way. Pure: safe anywhere.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const KENYAN_MOBILE = /^\+254[17]\d{8}$/;

/** A uuid in its canonical text form (any version): what a Postgres uuid column accepts. */
export const isUuid = (value: string): boolean => UUID.test(value);

/** A Kenyan mobile number in international form (+2547XXXXXXXX, +2541XXXXXXXX): what the mobile-money provider carries. */
export const isKenyanMobile = (value: string): boolean => KENYAN_MOBILE.test(value);

/**
 * A Kenyan mobile number in any of the forms providers send it (`254712345678` as a number or
 * text, `+254712345678`, `0712345678`, `712345678`) as `+254712345678`; undefined for anything
 * else, a masked number (`2547*****678`) included.
 */
export function normalizeKenyanMobile(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const match = /^(?:254|0)?([17]\d{8})$/.exec(String(value).trim().replace(/^\+/, ''));
  return match ? `+254${match[1]}` : undefined;
}

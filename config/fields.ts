import { isIP } from 'node:net';
import { z } from 'zod';
import { parseByteSize, parseDuration } from './duration';

/*
 * The kinds of setting the configuration fragments are built from. Environment values are
 * strings; each kind parses one and refuses a wrong one with a hint that names what it expects.
 */

/** A string setting parsed by `parse`, refused with `hint` when it returns undefined. */
const parsed = (fallback: string, parse: (text: string) => number | undefined, hint: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const value = parse(text);
      if (value === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected ${hint}, got "${text}"` });
        return z.NEVER;
      }
      return value;
    });
export const duration = (fallback: string) => parsed(fallback, parseDuration, 'a duration such as 30s, 15m or 1h');
export const byteSize = (fallback: string) => parsed(fallback, parseByteSize, 'a size such as 100kb or 15mb');

export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
export const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
export const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(z.url().optional());
export const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

/** A calendar date (YYYY-MM-DD), as the midnight UTC it starts at. */
export const date = (fallback: string) =>
  z.iso
    .date()
    .default(fallback)
    .transform((day) => new Date(`${day}T00:00:00Z`));

/** Comma-separated IP addresses and CIDR blocks (`196.201.214.0/24`); empty means no list. */
export const addressList = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const entries = text
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    for (const entry of entries) {
      const [address = '', prefix] = entry.split('/');
      const family = isIP(address);
      const bits = family === 6 ? 128 : 32;
      if (family === 0 || (prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= bits))) {
        ctx.addIssue({ code: 'custom', message: `expected IP addresses or CIDR blocks, got "${entry}"` });
        return z.NEVER;
      }
    }
    return entries;
  });

import type { z } from 'zod';
import { ErrorCode, type InvalidParam, ServiceError, SubCode } from '../domain/errors';
import { unstorableText } from '../domain/text';

/** The parts of a request a route can declare a schema for, named as they appear in `invalid_params[].path`. */
export const REQUEST_PARTS = { params: 'path', query: 'query', headers: 'header', body: 'body' } as const;
export type RequestPart = keyof typeof REQUEST_PARTS;

/** Reads the value an issue points at, so a missing value can be told from a wrong one. */
function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function subCodeOf(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return value === undefined ? SubCode.REQUIRED : SubCode.INVALID_TYPE;
    case 'invalid_format':
      return issue.format === 'uuid' || issue.format === 'guid' ? SubCode.INVALID_UUID : SubCode.INVALID_FORMAT;
    case 'too_big':
      return issue.origin === 'string' || issue.origin === 'array' ? SubCode.TOO_LONG : SubCode.OUT_OF_RANGE;
    case 'too_small':
      return issue.origin === 'string' || issue.origin === 'array' ? SubCode.TOO_SHORT : SubCode.OUT_OF_RANGE;
    case 'invalid_value':
      return SubCode.INVALID_ENUM;
    case 'invalid_union':
      // A discriminated union (e.g. the verification channel) names its options like an enum.
      if ((issue as { note?: string }).note === 'No matching discriminator')
        return value === undefined ? SubCode.REQUIRED : SubCode.INVALID_ENUM;
      return SubCode.INVALID_VALUE;
    case 'unrecognized_keys':
      return SubCode.UNKNOWN_FIELD;
    case 'custom': {
      const given = (issue.params as { sub_code?: unknown } | undefined)?.sub_code;
      return typeof given === 'string' ? given : SubCode.INVALID_VALUE;
    }
    default:
      return SubCode.INVALID_VALUE;
  }
}

/**
 * `<part>.<name>`, one step of the convention of `invalid_params[].path` (api/schemas/errors.ts):
 * a name that is not fit to be echoed as it is (unstorable, empty, or holding a dot, a quote, a
 * backslash or a space) is given JSON-quoted, its unstorable characters escaped
 * (`body."a\u0000b"`); a name is cut at 100 code points (the last one `…`).
 */
export function named(parent: string, name: string): string {
  // Cut by code points, before quoting: a cut never splits a surrogate pair or an escape.
  const points = Array.from(name);
  const cut = points.length > 100 ? `${points.slice(0, 99).join('')}…` : name;
  const plain = cut.length > 0 && !unstorableText(cut) && !/["\\.\s]/.test(cut);
  return `${parent}.${plain ? cut : JSON.stringify(cut)}`;
}

const joinPath = (prefix: string, path: readonly PropertyKey[]) =>
  path.reduce<string>((joined, key) => named(joined, String(key)), prefix);

/** Every zod issue as `invalid_params` entries: one per offending field, unknown keys one each. */
export function toInvalidParams(part: RequestPart, error: z.ZodError, input: unknown): InvalidParam[] {
  const prefix = REQUEST_PARTS[part];
  return error.issues.flatMap((issue): InvalidParam[] => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: joinPath(prefix, [...issue.path, key]),
        reason: 'unknown field',
        sub_code: SubCode.UNKNOWN_FIELD,
      }));
    }
    const value = valueAt(input, issue.path);
    const reason = issue.code === 'invalid_type' && value === undefined ? 'required' : issue.message;
    return [{ path: joinPath(prefix, issue.path), reason, sub_code: subCodeOf(issue, value) }];
  });
}

export type RequestSchemas = Partial<Record<RequestPart, z.ZodType>>;
export type RawRequest = Record<RequestPart, unknown>;

/** Every declared part of a request checked: the parsed values, and every offending field. */
export function checkRequest(
  schemas: RequestSchemas,
  raw: RawRequest,
): { values: Record<RequestPart, unknown>; problems: InvalidParam[] } {
  const values: Record<RequestPart, unknown> = { ...raw };
  const problems: InvalidParam[] = [];
  for (const part of Object.keys(REQUEST_PARTS) as RequestPart[]) {
    const schema = schemas[part];
    if (!schema) continue;
    const result = schema.safeParse(raw[part]);
    if (result.success) values[part] = result.data;
    else problems.push(...toInvalidParams(part, result.error, raw[part]));
  }
  return { values, problems };
}

export const invalidParams = (problems: InvalidParam[]) =>
  new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', problems);

/**
 * Validates every declared part of a request and reports all offending fields at once, so a
 * client fixes its request in one round trip.
 */
export function validateRequest(schemas: RequestSchemas, raw: RawRequest): Record<RequestPart, unknown> {
  const { values, problems } = checkRequest(schemas, raw);
  if (problems.length > 0) throw invalidParams(problems);
  return values;
}

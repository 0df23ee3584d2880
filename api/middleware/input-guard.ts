import type { Middleware } from 'koa';
import { ErrorCode, type InvalidParam, ServiceError, SubCode } from '../../domain/errors';
import { unstorableText } from '../../domain/text';
import { named } from '../validation';

/**
 * The one guard at the edge: bytes that Postgres, the JSON parser or a workflow cannot take are
 * refused with 400 in the route's error family before any handler, query or workflow sees them.
 * The limits are the README's (Errors, "Input the service refuses at the edge").
 */
export const INPUT_LIMITS = {
  /** Objects and arrays inside one another in a JSON body; our deepest body (a provider callback) uses 6. */
  jsonDepth: 32,
  /** Characters of one decoded path segment; the longest identifier the spec allows is 255. */
  pathSegment: 1024,
  /** Offending fields listed in one answer: enough to fix a request, bounded for a hostile one. */
  problems: 20,
} as const;

/** A path of printable ASCII with nothing percent-encoded, every segment within the limit. */
const PLAIN_PATH = new RegExp(`^(?:/[\\x21-\\x24\\x26-\\x2e\\x30-\\x7e]{0,${INPUT_LIMITS.pathSegment}})*/?$`);

/** Keys that would reach an object's prototype if anything ever merged a body into an object. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
/** Any of them anywhere in a JSON text (a key, a value, or a part of either). No `g`: `test` must keep no state. */
const RESERVED_NAMES = new RegExp([...RESERVED_KEYS].join('|'));

const refused = (problems: InvalidParam[]) =>
  new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', problems.slice(0, INPUT_LIMITS.problems));

/**
 * The name of each path segment of a route template: its parameter (`{id}` is `path.id`), or,
 * for a literal segment, the segment's position (it matched the route, so it is only ever
 * refused past the length limit, which no literal reaches).
 */
const segmentNames = (template: string) =>
  template.split('/').map((segment, index) => {
    const param = /^\{(.+)\}$/.exec(segment)?.[1];
    return `path.${param ?? index}`;
  });

/**
 * Path segments and query values, before routing: a segment that is not percent-encoded UTF-8
 * (a lone surrogate arrives as %ED%A0%80), holds a NUL, or is longer than the limit; a query
 * name or value holding a NUL or a lone surrogate.
 */
export function requestGuard(routePath: string): Middleware {
  const names = segmentNames(routePath);
  return async (ctx, next) => {
    // Most requests are plain: nothing encoded, nothing past the limit, no query. They pass as they are.
    if (PLAIN_PATH.test(ctx.path) && ctx.querystring === '') return next();
    const problems: InvalidParam[] = [];
    ctx.path.split('/').forEach((raw, index) => {
      if (raw === '') return;
      let segment: string;
      try {
        segment = decodeURIComponent(raw);
      } catch {
        problems.push({
          path: names[index] ?? `path.${index}`,
          reason: `segment ${index} is not percent-encoded UTF-8`,
          sub_code: SubCode.INVALID_CHARACTERS,
        });
        return;
      }
      const why = unstorableText(segment);
      const path = names[index] ?? `path.${index}`;
      if (why) problems.push({ path, reason: `segment ${index} ${why}`, sub_code: SubCode.INVALID_CHARACTERS });
      else if (segment.length > INPUT_LIMITS.pathSegment) {
        problems.push({
          path,
          reason: `segment ${index} is longer than ${INPUT_LIMITS.pathSegment} characters`,
          sub_code: SubCode.TOO_LONG,
        });
      }
    });
    for (const [name, value] of Object.entries(ctx.query)) {
      const why = [name, ...(Array.isArray(value) ? value : [value ?? ''])].map(unstorableText).find(Boolean);
      if (why) problems.push({ path: named('query', name), reason: why, sub_code: SubCode.INVALID_CHARACTERS });
    }
    if (problems.length > 0) throw refused(problems);
    await next();
  };
}

/**
 * One pass over a JSON text, before it is parsed: how deeply it nests (brackets outside strings),
 * so an absurdly nested body is refused before any parser or walker recurses into it; and whether
 * a parsed value could hold anything inspectJson refuses. Text decoded as UTF-8 holds no lone
 * surrogate, and JSON refuses a raw NUL (a control character) in a string, so either can only
 * arrive as a `\u` escape; a reserved key only as its name in the text. A body with neither (most
 * bodies) needs no walk after parsing.
 */
export function scanJson(text: string, depthLimit: number): { tooDeep: boolean; needsInspection: boolean } {
  let depth = 0;
  let inString = false;
  let escapes = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        if (text.charCodeAt(i + 1) === 0x75) escapes = true; // \u: any code unit, NUL and surrogates included
        i++; // a backslash escapes the next character
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > depthLimit) return { tooDeep: true, needsInspection: true };
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  const needsInspection = escapes || unstorableText(text) !== undefined || RESERVED_NAMES.test(text);
  return { tooDeep: false, needsInspection };
}

/**
 * Every string (keys included) of a parsed JSON body that cannot be stored, and every reserved
 * key, with its path (`body.a.0.b`). Iterative: the nesting was bounded before parsing.
 */
export function inspectJson(value: unknown): InvalidParam[] {
  const problems: InvalidParam[] = [];
  const stack: { value: unknown; path: string }[] = [{ value, path: 'body' }];
  while (stack.length > 0 && problems.length < INPUT_LIMITS.problems) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') {
      const why = unstorableText(current);
      if (why) problems.push({ path, reason: why, sub_code: SubCode.INVALID_CHARACTERS });
    } else if (Array.isArray(current)) {
      current.forEach((item, index) => stack.push({ value: item, path: `${path}.${index}` }));
    } else if (current !== null && typeof current === 'object') {
      for (const [key, item] of Object.entries(current)) {
        const keyWhy = unstorableText(key);
        if (keyWhy)
          problems.push({ path: named(path, key), reason: `a key ${keyWhy}`, sub_code: SubCode.INVALID_CHARACTERS });
        else if (RESERVED_KEYS.has(key))
          problems.push({ path: named(path, key), reason: 'reserved key name', sub_code: SubCode.RESERVED_KEY });
        else stack.push({ value: item, path: named(path, key) });
      }
    }
  }
  return problems;
}

/**
 * A form-encoded body's text as an object of strings, or the refusal: a field given twice (which
 * one would count?), or what cannot be stored.
 */
export function parseGuardedForm(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const problems: InvalidParam[] = [];
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(fields, key))
      problems.push({ path: named('body', key), reason: 'a field given twice', sub_code: SubCode.INVALID_VALUE });
    fields[key] = value;
  }
  problems.push(...inspectJson(fields));
  if (problems.length > 0) throw refused(problems.slice(0, INPUT_LIMITS.problems));
  return fields;
}

/**
 * A JSON body's text as a value, or the refusal in the route's family: nested past the limit
 * (checked before parsing), not JSON (MALFORMED_JSON), or holding what cannot be stored (walked
 * only when the scan found a `\u` escape or a reserved name).
 */
export function parseGuardedJson(text: string): unknown {
  const scanned = scanJson(text, INPUT_LIMITS.jsonDepth);
  if (scanned.tooDeep) {
    throw refused([
      { path: 'body', reason: `nested deeper than ${INPUT_LIMITS.jsonDepth} levels`, sub_code: SubCode.TOO_DEEP },
    ]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ServiceError(ErrorCode.INVALID_PARAMS, 'The request body is not valid JSON', [
      { path: 'body', reason: 'malformed JSON', sub_code: SubCode.MALFORMED_JSON },
    ]);
  }
  if (!scanned.needsInspection) return value;
  const problems = inspectJson(value);
  if (problems.length > 0) throw refused(problems);
  return value;
}

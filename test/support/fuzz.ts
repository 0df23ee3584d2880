import http from 'node:http';
import fc from 'fast-check';

/**
 * The fuzz test's parts: the OpenAPI document read as operations, fast-check arbitraries for
 * each part of a request (loosely derived from the document, plus hostile inputs), a raw HTTP
 * sender that puts exactly the given bytes on the wire, and the spec section 7 checks.
 */

// ---------------------------------------------------------------------------------------------
// The document

export type Schema = { [key: string]: unknown };
export interface Param {
  name: string;
  required: boolean;
  schema: Schema;
}
export interface Operation {
  method: string;
  template: string;
  /** Security scheme names (any one of them is accepted); empty when the operation is public. */
  schemes: string[];
  path: Param[];
  query: Param[];
  header: Param[];
  /** The JSON request body's schema, when the operation declares one. */
  body?: Schema;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Schema>>;
  components?: { schemas?: Record<string, Schema> };
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([template, operations]) =>
    Object.entries(operations).map(([method, raw]) => {
      const params = (raw.parameters ?? []) as { in: string; name: string; required?: boolean; schema?: Schema }[];
      const of = (where: string): Param[] =>
        params
          .filter((p) => p.in === where)
          .map((p) => ({ name: p.name, required: p.required === true, schema: p.schema ?? {} }));
      const body = (raw.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.[
        'application/json'
      ]?.schema;
      return {
        method: method.toUpperCase(),
        template,
        schemes: ((raw.security ?? []) as Record<string, unknown>[]).flatMap((s) => Object.keys(s)),
        path: of('path'),
        query: of('query'),
        header: of('header'),
        body,
      };
    }),
  );
}

/** Spec section 7: the KYC, financing and internal endpoints answer the validation shape. */
const VALIDATION_FAMILY = /^\/(v1\/kyc|v1\/financing|v1\/internal|api\/internal)(\/|$)/;
export const familyOf = (template: string) => (VALIDATION_FAMILY.test(template) ? 'validation' : 'plain');

/** Health, metrics and documents may answer non-JSON successes (never non-JSON errors). */
const OPERATIONS_ENDPOINTS = /^\/(healthz|readyz|metrics|openapi\.json|docs)(\/|$)/;
export const isOperationsEndpoint = (template: string) => OPERATIONS_ENDPOINTS.test(template);

// ---------------------------------------------------------------------------------------------
// What a generated request is made of

/** The credentials the test holds; `none` sends no Authorization header. */
export type CallerName = 'none' | 'customer' | 'ops' | 'platformKey' | 'partner' | 'partnerAssertion' | 'financing';
export const CALLERS: readonly CallerName[] = [
  'none',
  'customer',
  'ops',
  'platformKey',
  'partner',
  'partnerAssertion',
  'financing',
];

/** Which of the test's callers present each security scheme of the document. */
export const CALLERS_BY_SCHEME: Record<string, CallerName[]> = {
  backendBearer: ['customer', 'ops'],
  apiKey: ['platformKey'],
  partnerAccessToken: ['partner'],
  /** The partner's own signed JWT, presented to /v1/auth/exchange. */
  partnerJwt: ['partnerAssertion'],
  financingBearer: ['financing'],
};

/** A real caller's token, made wrong in one way at send time. */
export type Mangle = 'lower-case scheme' | 'tab separator' | 'token twice' | 'signature cut' | 'trailing junk';
export type AuthChoice =
  | { kind: 'caller'; caller: CallerName }
  | { kind: 'mangled'; caller: Exclude<CallerName, 'none'>; how: Mangle }
  | { kind: 'raw'; value: string; label: string };

export interface BodyChoice {
  bytes: Buffer;
  /** Content-Type sent with it; undefined sends none. */
  contentType?: string;
  /** Extra headers that belong to the body (Content-Encoding). */
  headers?: Record<string, string>;
  /** Sent with Transfer-Encoding: chunked rather than Content-Length. */
  chunked?: boolean;
}

/** One generated request, before the credentials are filled in. */
export interface FuzzInput {
  /** Where it comes from, to find it again: `catalogue #12` or `sample #34 (seed 123)`. */
  origin: string;
  method: string;
  /** The path exactly as sent: each parameter already percent-encoded (or deliberately not). */
  path: string;
  /** The query string exactly as sent, without `?`. */
  query: string;
  auth: AuthChoice;
  headers: Record<string, string>;
  body?: BodyChoice;
  /** What is unusual about it, e.g. `path.id: NUL`; empty for a valid-looking request. */
  tags: string[];
}

/** A value and, when it is a deliberately odd one, the tag that says how. */
export interface Tagged<T> {
  value: T;
  tags: string[];
}
const plain = <T>(value: T): Tagged<T> => ({ value, tags: [] });
const tagged = <T>(tag: string, value: T): Tagged<T> => ({ value, tags: [tag] });

export interface Hostile {
  label: string;
  value: string;
}

// ---------------------------------------------------------------------------------------------
// Hostile inputs, each with why it is there

const KB10 = 'a'.repeat(10_000);

/** Path segments, as they go on the wire (already percent-encoded where a client would). */
export const HOSTILE_SEGMENTS: readonly Hostile[] = [
  { label: 'NUL', value: '%00' }, // decoded to U+0000: Postgres text refuses it, so it must never reach a query unchecked
  { label: 'lone surrogate as invalid UTF-8', value: '%ED%A0%80' }, // CESU-8 of U+D800: decodeURIComponent throws, Postgres refuses it
  { label: 'invalid UTF-8 byte', value: '%FF' }, // not UTF-8 at all
  { label: 'overlong 10 kB', value: KB10 }, // far past any column or index width
  { label: 'dot-dot', value: '..' }, // path traversal in whatever builds URLs or file names from it
  { label: 'encoded dot-dot and slash', value: '..%2F..%2Fetc%2Fpasswd' }, // traversal once decoded
  { label: 'unicode', value: encodeURIComponent('ünïcödé-中文-ß') }, // multi-byte UTF-8 where ids are ASCII
  { label: 'lone percent', value: '%' }, // a broken escape: decoding throws URIError
  { label: 'bad escape', value: '%zz' }, // another broken escape
  { label: 'spaces', value: '%20a%20b%20' }, // whitespace around and inside an id
  { label: 'emoji', value: encodeURIComponent('😀') }, // a surrogate pair in UTF-16, 4 bytes in UTF-8
  { label: 'quote and SQL', value: encodeURIComponent("' OR '1'='1") }, // string building into SQL
  { label: 'upper-case uuid', value: 'A11CE000-0000-4000-8000-000000000001' }, // uuid comparisons that are case-sensitive
  { label: 'control characters', value: '%01%1B%7F' }, // bytes that break logs and terminals
];

/** Query strings (without `?`) that misuse a declared parameter `name`. */
export function hostileQueryValues(name: string): Hostile[] {
  return [
    { label: 'known name, NUL value', value: `${name}=%00` },
    { label: 'known name, lone surrogate', value: `${name}=%ED%A0%80` },
    { label: 'known name, 10 kB value', value: `${name}=${KB10}` },
    { label: 'known name, empty value', value: `${name}=` },
    { label: 'known name, no value', value: name },
    { label: 'known name repeated', value: `${name}=1&${name}=2` }, // parsed as an array where a string is expected
    { label: 'known name, bracket syntax', value: `${name}[a]=1&${name}[]=2` }, // qs-style objects
    { label: 'known name, unicode value', value: `${name}=${encodeURIComponent('ünï 😀')}` },
  ];
}

/** Query strings (without `?`) whatever the operation declares. */
export const HOSTILE_QUERY_EXTRAS: readonly Hostile[] = [
  { label: 'unknown name', value: 'fuzz=1' },
  { label: 'unknown name repeated', value: 'a=1&a=2' },
  { label: '__proto__ name', value: '__proto__=1&constructor=2' }, // prototype pollution through the parsed query
  { label: 'NUL name', value: '%00=1' },
  { label: 'broken escapes', value: '%=%&%zz=%E0%A4%A' }, // decodeURIComponent throws on each
  { label: 'only separators', value: '&&==&' },
  { label: '1,000 parameters', value: Array.from({ length: 1_000 }, (_, i) => `p${i}=1`).join('&') }, // parser limits, one error per field
];

/** Authorization values that are not any caller's credential. */
export const HOSTILE_AUTHORIZATIONS: readonly Hostile[] = [
  { label: 'Bearer without token', value: 'Bearer' },
  { label: 'Bearer and a space', value: 'Bearer ' },
  { label: 'Basic credentials', value: 'Basic dXNlcjpwYXNz' }, // another scheme
  { label: 'not a JWT', value: 'Bearer not-a-jwt' },
  { label: 'three empty-ish parts', value: 'Bearer a.b.c' },
  {
    label: 'alg none JWT',
    value: 'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiIwYjVhOWMxZS0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDgifQ.',
  },
  { label: 'unknown API key', value: `Bearer lsk_${'A'.repeat(43)}` },
  { label: 'empty API key', value: 'Bearer lsk_' },
  { label: 'latin-1 byte', value: 'Bearer \u00e9t\u00e9' }, // a byte over 0x7f in a header: decoded as latin-1
  { label: '9 kB (over the app limit, under Node\u2019s)', value: `Bearer ${'A'.repeat(9_000)}` }, // refused by AUTH_MAX_HEADER_BYTES
  { label: '~20 kB (over Node\u2019s 16 kB header limit)', value: `Bearer ${'A'.repeat(20_000)}` }, // refused by Node itself (431)
];

/** Mangled forms of a real token (the caller is valid; the header is not quite). */
export const MANGLES: readonly Mangle[] = [
  'lower-case scheme',
  'tab separator',
  'token twice',
  'signature cut',
  'trailing junk',
];

export function mangle(token: string, how: Mangle): string {
  switch (how) {
    case 'lower-case scheme':
      return `bearer ${token}`;
    case 'tab separator':
      return `Bearer\t${token}`;
    case 'token twice':
      return `Bearer ${token}, Bearer ${token}`;
    case 'signature cut':
      return `Bearer ${token.slice(0, -10)}`;
    case 'trailing junk':
      return `Bearer ${token}.x`;
  }
}

/** Header values (NUL cannot be sent in a header: Node refuses it client-side, so it is left out). */
export const HOSTILE_IDEMPOTENCY_KEYS: readonly Hostile[] = [
  { label: 'empty', value: '' },
  { label: '300 characters', value: 'k'.repeat(300) }, // over the 255 the spec allows
  { label: '255 characters', value: 'k'.repeat(255) }, // the limit itself
  { label: 'latin-1 bytes', value: 'cl\u00e9-\u00ff' },
  { label: 'spaces only', value: '   ' },
];
export const HOSTILE_HEADER_VALUES: readonly Hostile[] = [
  { label: 'empty', value: '' },
  { label: '300 characters', value: 'v'.repeat(300) },
  { label: 'separators only', value: ',,, ;' },
  { label: 'unknown values', value: 'v9, v0, x' },
  { label: 'latin-1 bytes', value: 'v2, v\u00e9' },
  { label: '10 kB', value: 'v2,'.repeat(2_500) },
];
export const ODD_CONTENT_TYPES: readonly Hostile[] = [
  { label: 'upper-case', value: 'APPLICATION/JSON' },
  { label: 'charset utf-16', value: 'application/json; charset=utf-16' }, // UTF-8 bytes read as UTF-16
  { label: 'charset latin1', value: 'application/json; charset=latin1' },
  { label: 'unknown charset', value: 'application/json; charset=bogus' },
  { label: 'broken parameters', value: 'application/json;;;=' },
  { label: '+json suffix', value: 'application/vnd.api+json' },
  { label: 'text/plain', value: 'text/plain' },
  { label: 'form', value: 'application/x-www-form-urlencoded' },
  { label: 'wildcard', value: '*/*' },
  { label: 'not a media type', value: 'json' },
  { label: 'empty', value: '' },
];

/** JSON values to put into a field, as JSON text. */
export const HOSTILE_JSON_VALUES: readonly Hostile[] = [
  { label: 'string with \\u0000', value: '"a\\u0000b"' }, // Postgres text and jsonb refuse U+0000
  { label: 'lone high surrogate \\ud800', value: '"\\ud800"' }, // valid JSON, not valid UTF-8 once stored
  { label: 'lone low surrogate \\udfff', value: '"x\\udfffy"' },
  { label: 'reversed surrogate pair', value: '"\\udc00\\ud800"' },
  { label: '5,000 nested arrays', value: '['.repeat(5_000) + ']'.repeat(5_000) }, // recursion in validation, logging, storing
  { label: '5,000 nested objects', value: '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000) },
  { label: '1e400', value: '1e400' }, // parses to Infinity
  { label: '-1e400', value: '-1e400' },
  { label: '-0', value: '-0' },
  { label: '2^63', value: '9223372036854775808' }, // past bigint columns and safe integers
  { label: '30-digit integer', value: '123456789012345678901234567890' },
  { label: '1e-400', value: '1e-400' }, // underflows to 0
  { label: '50 kB string', value: `"${'x'.repeat(50_000)}"` },
  { label: 'unicode and RTL override', value: '"\u00fcn\u00efc\u00f6d\u00e9 \u202e \ud83d\ude00"' },
  { label: 'empty string', value: '""' },
  { label: 'array of 10,000 items', value: `[${'1,'.repeat(9_999)}1]` },
];

/** Whole bodies sent as application/json that are odd or not JSON at all. */
export const HOSTILE_JSON_BODIES: readonly Hostile[] = [
  { label: 'array 5,000 deep', value: '['.repeat(5_000) + ']'.repeat(5_000) },
  { label: 'object 5,000 deep', value: '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000) },
  { label: '__proto__ key', value: '{"__proto__":{"isAdmin":true,"polluted":1}}' }, // must be a plain field, never a prototype
  { label: 'constructor key', value: '{"constructor":{"prototype":{"polluted":1}}}' },
  { label: 'truncated', value: '{"a":' },
  { label: 'single quotes', value: "{'a':1}" },
  { label: 'trailing comma', value: '[1,]' },
  { label: 'two documents', value: '{}{}' },
  { label: 'trailing garbage', value: '{"a":1} garbage' },
  { label: 'NaN', value: 'NaN' },
  { label: 'null', value: 'null' },
  { label: 'string', value: '"text"' },
  { label: 'number', value: '123' },
  { label: 'array', value: '[]' },
  { label: 'one space', value: ' ' },
  { label: 'BOM then {}', value: '\ufeff{}' },
  { label: 'duplicate keys', value: '{"a":1,"a":2}' },
  { label: 'plain text', value: 'hello, world' },
  { label: '5,000 unknown keys', value: `{${Array.from({ length: 5_000 }, (_, i) => `"k${i}":${i}`).join(',')}}` }, // an entry per unknown field: a 50 kB body asks for a huge answer
];

/** Bodies that are not JSON text in UTF-8, with the media type they claim. */
export const OTHER_BODIES: readonly { label: string; body: BodyChoice }[] = [
  {
    label: 'invalid UTF-8 in a JSON string',
    body: {
      bytes: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0xff, 0x22, 0x7d]),
      contentType: 'application/json',
    },
  },
  { label: 'UTF-16LE JSON', body: { bytes: Buffer.from('{"a":1}', 'utf16le'), contentType: 'application/json' } }, // NUL bytes on the wire
  { label: 'text/plain', body: { bytes: Buffer.from('hello'), contentType: 'text/plain' } },
  { label: 'form', body: { bytes: Buffer.from('a=1&b=2'), contentType: 'application/x-www-form-urlencoded' } },
  {
    label: 'multipart',
    body: {
      bytes: Buffer.from('--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n'),
      contentType: 'multipart/form-data; boundary=x',
    },
  },
  { label: 'XML', body: { bytes: Buffer.from('<?xml version="1.0"?><a/>'), contentType: 'application/xml' } },
  {
    label: 'binary bytes',
    body: { bytes: Buffer.from([0, 1, 2, 0xfe, 0xff, 0]), contentType: 'application/octet-stream' },
  },
  { label: 'JSON without Content-Type', body: { bytes: Buffer.from('{}') } },
  {
    label: 'gzip claimed, not gzip',
    body: { bytes: Buffer.from('{}'), contentType: 'application/json', headers: { 'Content-Encoding': 'gzip' } },
  },
  {
    label: 'unknown Content-Encoding',
    body: { bytes: Buffer.from('{}'), contentType: 'application/json', headers: { 'Content-Encoding': 'compress' } },
  },
  { label: 'chunked JSON', body: { bytes: Buffer.from('{}'), contentType: 'application/json', chunked: true } },
  {
    label: '150 kB (over BODY_LIMIT)',
    body: { bytes: Buffer.from(`{"a":"${'x'.repeat(150_000)}"}`), contentType: 'application/json' },
  },
];

// ---------------------------------------------------------------------------------------------
// Values that look valid, from the document and the test's own data

export interface World {
  doc: OpenApiDocument;
  /** Valid-looking values by parameter or body field name (seeded ids, the test customer's). */
  hints: Record<string, readonly unknown[]>;
  /** Ids of rows that exist, for any uuid-shaped value. */
  uuids: readonly string[];
}

export const deref = (world: World, schema: Schema): Schema => {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  return world.doc.components?.schemas?.[ref.replace('#/components/schemas/', '')] ?? {};
};

const typeOf = (schema: Schema): string | undefined =>
  typeof schema.type === 'string'
    ? schema.type
    : schema.properties || schema.additionalProperties !== undefined
      ? 'object'
      : undefined;

const branchesOf = (schema: Schema): Schema[] | undefined => (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;

/** A deterministic valid-looking value: the catalogue's baseline. */
export function example(world: World, raw: Schema, name = ''): unknown {
  const schema = deref(world, raw);
  const hint = world.hints[name]?.[0];
  if (hint !== undefined) return hint;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const branches = branchesOf(schema);
  if (branches?.[0]) return example(world, branches[0], name);
  switch (typeOf(schema)) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = (schema.required ?? []) as string[];
      return Object.fromEntries(required.map((key) => [key, example(world, properties[key] ?? {}, key)]));
    }
    case 'array':
      return [example(world, (schema.items ?? {}) as Schema, name)];
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'string':
      if (schema.format === 'uuid') return world.uuids[0];
      if (typeof schema.pattern === 'string')
        return fc.sample(fc.stringMatching(new RegExp(schema.pattern)), { seed: 1, numRuns: 1 })[0];
      return 'x'.repeat(Math.max(1, Number(schema.minLength ?? 1)));
    default:
      return {};
  }
}

/** Arbitrary valid-looking values of a schema (hints first, then the schema's own constraints). */
export function validValue(world: World, raw: Schema, name: string, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(world, raw);
  const own = validFromSchema(world, schema, name, depth);
  const hints = world.hints[name];
  return hints?.length
    ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...hints) }, { weight: 1, arbitrary: own })
    : own;
}

function validFromSchema(world: World, schema: Schema, name: string, depth: number): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...(schema.enum as unknown[]));
  const branches = branchesOf(schema);
  if (branches?.length) return fc.oneof(...branches.map((b) => validValue(world, b, name, depth)));
  switch (typeOf(schema)) {
    case 'object': {
      const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
      if (properties.length === 0 || depth > 3)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
      const model = Object.fromEntries(properties.map(([key, p]) => [key, validValue(world, p, key, depth + 1)]));
      return fc.record(model, { requiredKeys: (schema.required ?? []) as string[] });
    }
    case 'array':
      return fc.array(validValue(world, (schema.items ?? {}) as Schema, name, depth + 1), { maxLength: 3 });
    case 'integer':
      return fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), fc.constantFrom(0, 1, 100, 10_000, 100_000));
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'string':
      if (schema.format === 'uuid') return fc.oneof(fc.constantFrom(...world.uuids), fc.uuid());
      if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern));
      return fc.string({
        minLength: Number(schema.minLength ?? 0),
        maxLength: Math.min(Number(schema.maxLength ?? 20), 20),
      });
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

// ---------------------------------------------------------------------------------------------
// Loose bodies: JSON text with right field names, wrong types, missing and extra fields

const WRONG_TYPES = fc.constantFrom('null', 'true', '0', '-1', '1.5', '"1"', '[]', '{}', '[null]', '{"value":1}');
const EXTRA_KEYS = fc.constantFrom(
  'extra',
  'id',
  'organization_id',
  'user_id',
  'status',
  'admin',
  '__proto__',
  'constructor',
  'prototype',
  '',
);
const RANDOM_STRING = fc.string({ unit: 'binary', maxLength: 30 }).map((s) => JSON.stringify(s)); // control characters included

const json = (value: unknown) => JSON.stringify(value) ?? 'null';
const objectText = (entries: [string, string][]) => `{${entries.map(([k, v]) => `${json(k)}:${v}`).join(',')}}`;

/** A value of `schema` as JSON text: mostly valid-looking, sometimes of the wrong type or hostile. */
export function looseJson(world: World, raw: Schema, name: string, depth = 0): fc.Arbitrary<Tagged<string>> {
  const schema = deref(world, raw);
  const field = name || '(root)';
  const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
  const structured =
    typeOf(schema) === 'object' && properties.length > 0 && depth < 3
      ? looseObject(world, schema, properties, depth)
      : typeOf(schema) === 'array' && depth < 3
        ? fc
            .array(looseJson(world, (schema.items ?? {}) as Schema, `${name}[]`, depth + 1), { maxLength: 3 })
            .map((items) => ({
              value: `[${items.map((i) => i.value).join(',')}]`,
              tags: items.flatMap((i) => i.tags),
            }))
        : validValue(world, schema, name, depth).map((v) => plain(json(v)));
  return fc.oneof(
    { weight: 6, arbitrary: structured },
    { weight: 1, arbitrary: WRONG_TYPES.map((t) => tagged(`body.${field}: wrong type`, t)) },
    { weight: 1, arbitrary: RANDOM_STRING.map((t) => tagged(`body.${field}: random string`, t)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...HOSTILE_JSON_VALUES).map((h) => tagged(`body.${field}: ${h.label}`, h.value)),
    },
  );
}

function looseObject(
  world: World,
  schema: Schema,
  properties: [string, Schema][],
  depth: number,
): fc.Arbitrary<Tagged<string>> {
  const model: Record<string, fc.Arbitrary<Tagged<string>>> = Object.fromEntries(
    properties.map(([key, p]) => [key, looseJson(world, p, key, depth + 1)]),
  );
  const required = (schema.required ?? []) as string[];
  const fields = fc.oneof(
    { weight: 4, arbitrary: fc.record(model, { requiredKeys: required }).map((r) => ({ r, missing: false })) },
    { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }).map((r) => ({ r, missing: true })) },
  );
  const extra = fc.tuple(
    EXTRA_KEYS,
    fc.oneof(
      WRONG_TYPES,
      RANDOM_STRING,
      fc.constantFrom(...HOSTILE_JSON_VALUES).map((h) => h.value),
    ),
  );
  const extras = fc.oneof(
    { weight: 4, arbitrary: fc.constant([]) },
    { weight: 1, arbitrary: fc.array(extra, { minLength: 1, maxLength: 2 }) },
  );
  return fc.tuple(fields, extras).map(([{ r, missing }, more]) => {
    const entries = Object.entries(r as Record<string, Tagged<string>>);
    const tags = entries.flatMap(([, v]) => v.tags);
    if (missing && required.some((key) => !(key in r))) tags.push('body: required field missing');
    tags.push(...more.map(([key]) => `body: extra field ${json(key)}`));
    return { value: objectText([...entries.map(([k, v]): [string, string] => [k, v.value]), ...more]), tags };
  });
}

/**
 * `value` as JSON text with the field at `path` replaced by (or added as) raw JSON text. Written
 * as text so that raw numbers (1e400, -0) and keys such as __proto__ go out exactly as given.
 */
export function withRawField(value: unknown, path: readonly string[], raw: string): string {
  const PLACEHOLDER = '\u0001FIELD\u0001';
  const copy = (typeof value === 'object' && value !== null ? structuredClone(value) : {}) as Record<string, unknown>;
  let target = copy;
  for (const key of path.slice(0, -1)) {
    if (typeof target[key] !== 'object' || target[key] === null) target[key] = {};
    target = target[key] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  delete target[last];
  target[PLACEHOLDER] = PLACEHOLDER;
  return JSON.stringify(copy).replace(`${json(PLACEHOLDER)}:${json(PLACEHOLDER)}`, () => `${json(last)}:${raw}`);
}

// ---------------------------------------------------------------------------------------------
// Sending exactly the given bytes

export interface WireRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: BodyChoice;
}
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Set when no complete answer came (connection reset, timeout). */
  error?: string;
}

/**
 * A node:http sender: the path goes out byte for byte (fetch would normalise it), and at most
 * `concurrency` requests are in flight on keep-alive connections.
 */
export function rawSender(baseUrl: string, options: { concurrency: number; timeoutMs: number }) {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });

  const once = (request: WireRequest) =>
    new Promise<Answer & { reused: boolean }>((resolve) => {
      const headers: Record<string, string> = { ...request.headers, ...request.body?.headers };
      const body = request.body;
      if (body?.contentType !== undefined) headers['Content-Type'] = body.contentType;
      if (body && !body.chunked) headers['Content-Length'] = String(body.bytes.length);
      const req = http.request({
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        headers,
        agent,
      });
      const fail = (error: NodeJS.ErrnoException) =>
        resolve({
          status: 0,
          headers: {},
          body: Buffer.alloc(0),
          error: error.code ?? error.message,
          reused: req.reusedSocket,
        });
      req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
      req.on('error', fail);
      req.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks),
            reused: false,
          }),
        );
        // The server may close once it has answered (431, 413): what arrived is the answer.
        response.on('close', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks),
            reused: false,
          }),
        );
      });
      if (body?.chunked) req.write(body.bytes);
      req.end(body?.chunked ? undefined : body?.bytes);
    });

  return {
    async send(request: WireRequest): Promise<Answer> {
      const answer = await once(request);
      // A keep-alive connection the server closed just as it was reused: not the request's fault.
      if (answer.error === 'ECONNRESET' && answer.reused) return once(request);
      return answer;
    },
    close: () => agent.destroy(),
  };
}

/** Runs `work` over `items` with at most `concurrency` in flight. */
export async function inPool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

// ---------------------------------------------------------------------------------------------
// The checks (spec section 7)

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const contentTypeOf = (answer: Answer) => String(answer.headers['content-type'] ?? '');
const isJsonType = (type: string) => /^application\/json\b/i.test(type);

/** What is wrong with an error body for its family, or undefined when it is in shape. */
function errorShapeProblem(family: 'validation' | 'plain', answer: Answer): string | undefined {
  const type = contentTypeOf(answer);
  if (!isJsonType(type))
    return `error body is not JSON (Content-Type ${type || 'none'}, ${answer.body.length ? 'non-empty' : 'empty'} body)`;
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return 'error body is not JSON (does not parse)';
  }
  if (!isObject(body)) return 'error body is not a JSON object';
  const expected =
    family === 'validation' ? ['code', 'description', 'identifier', 'invalid_params'] : ['code', 'description'];
  const issues: string[] = [];
  const missing = expected.filter((key) => !(key in body));
  const extra = Object.keys(body).filter((key) => !expected.includes(key));
  if (missing.length) issues.push(`missing ${missing.join(', ')}`);
  if (extra.length) issues.push(`extra ${extra.join(', ')}`);
  if (typeof body.code !== 'string' || !/^[A-Z_]+$/.test(body.code))
    issues.push('code is not an upper-case identifier');
  if (typeof body.description !== 'string') issues.push('description is not a string');
  if (family === 'validation') {
    if (typeof body.identifier !== 'string') issues.push('identifier is not a string');
    const params = body.invalid_params;
    const wellFormed = (p: unknown) =>
      isObject(p) && typeof p.path === 'string' && typeof p.reason === 'string' && typeof p.sub_code === 'string';
    if (!Array.isArray(params) || !params.every(wellFormed))
      issues.push('invalid_params is not an array of {path, reason, sub_code} strings');
  }
  return issues.length ? `error body is not the ${family} shape: ${issues.join('; ')}` : undefined;
}

/** A body that is a JSON object or array as JSON.parse reads it, sent plainly as application/json. */
function isWellFormedJson(body: BodyChoice | undefined): boolean {
  if (
    !body ||
    body.headers?.['Content-Encoding'] ||
    !/^application\/json(\s*;\s*charset=utf-8)?$/i.test(body.contentType ?? '')
  )
    return false;
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body.bytes));
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
}

/** The answer says the body is not JSON (MALFORMED_JSON, or the plain family's wording of it). */
function saysMalformed(answer: Answer): boolean {
  try {
    const body = JSON.parse(answer.body.toString('utf8')) as {
      description?: unknown;
      invalid_params?: { sub_code?: unknown }[];
    };
    return (
      (Array.isArray(body.invalid_params) && body.invalid_params.some((p) => p?.sub_code === 'MALFORMED_JSON')) ||
      /malformed JSON|not valid JSON/i.test(String(body.description))
    );
  } catch {
    return false;
  }
}

/** Every rule an answer breaks, each as a stable reason (the same cause reads the same). */
export function problemsOf(op: Operation, answer: Answer, sent?: BodyChoice): string[] {
  if (answer.error) return [`no answer (${answer.error})`];
  const problems: string[] = [];
  if (answer.status >= 500) problems.push('5xx answer');
  if (answer.status >= 400) {
    const shape = errorShapeProblem(familyOf(op.template), answer);
    if (shape) problems.push(shape);
    // Refusing it may be right (reserved keys, nesting); calling it malformed misleads the client.
    if (answer.status === 400 && isWellFormedJson(sent) && saysMalformed(answer))
      problems.push('well-formed JSON refused as malformed');
  } else if (
    answer.status >= 200 &&
    answer.status < 300 &&
    answer.body.length > 0 &&
    !isOperationsEndpoint(op.template)
  ) {
    if (!isJsonType(contentTypeOf(answer))) problems.push('success body is not JSON');
  }
  if (answer.status === 401 && !answer.headers['www-authenticate']) problems.push('401 without WWW-Authenticate');
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Showing a request and an answer

const MAX_SHOWN = 300;

/** Bytes as text: printable ASCII as is, everything else as \xNN, so NUL and bad UTF-8 show. */
export function showBytes(bytes: Buffer, max = MAX_SHOWN): string {
  const head = bytes.subarray(0, max);
  let text = '';
  for (const byte of head)
    text += byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  return bytes.length > max ? `${text}… (${bytes.length} bytes)` : text;
}
export const showText = (text: string, max = MAX_SHOWN) => showBytes(Buffer.from(text, 'utf8'), max);

import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../api/openapi';
import { harness } from './harness';

/**
 * Our answers against our own OpenAPI document (issue 29): every answer a test receives from the
 * service is validated, with ajv, against the document's schema for its operation and status, so
 * a client generated from /openapi.json can read whatever we send; and every JSON body a test
 * sends that the service accepts (2xx) against the operation's request schema, so the document
 * never refuses what the service takes. A mismatch fails the test that met it, with JSON paths.
 */

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  /** Literal segments: a more specific template wins (`/v1/agents/{id}` vs `/v1/{area}/{id}`). */
  literals: number;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, OperationObject>>;
}
interface OperationObject {
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

let checker: { document: OpenApiDocument; operations: Operation[]; ajv: Ajv2020 } | undefined;
const compiled = new Map<string, ValidateFunction | null>();

function load() {
  if (checker) return checker;
  // The service's own routes: the harness's test-only ones (`/__test__/`) are no contract.
  const routes = harness().routes.filter((route) => !route.path.includes('/__test__/'));
  const document = buildOpenApiDocument(routes) as unknown as OpenApiDocument;
  // OpenAPI 3.1 schemas are JSON Schema 2020-12; the document's own keywords (description,
  // example, x-…) are not schema errors, hence strict off. Formats as JSON Schema defines them.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi');
  const operations: Operation[] = [];
  for (const [template, methods] of Object.entries(document.paths))
    for (const method of Object.keys(methods)) {
      const segments = template.split('/');
      operations.push({
        method: method.toUpperCase(),
        template,
        pattern: new RegExp(`^${segments.map((s) => (/^\{.+\}$/.test(s) ? '[^/]+' : escape(s))).join('/')}$`),
        literals: segments.filter((s) => s && !s.startsWith('{')).length,
      });
    }
  operations.sort((a, b) => b.literals - a.literals);
  checker = { document, operations, ajv };
  return checker;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A JSON pointer to a key of the document, as a URI fragment. */
const pointer = (...keys: string[]) =>
  `openapi#/${keys.map((k) => encodeURIComponent(k.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;

function validator(ref: string): ValidateFunction | null {
  if (!compiled.has(ref)) compiled.set(ref, load().ajv.getSchema(ref) ?? null);
  return compiled.get(ref)!;
}

const describe = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? []).map(
    (e) => `  ${e.instancePath || '(root)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`,
  );

/**
 * What in an exchange with the service disagrees with the document: nothing when the path is not
 * one of its operations (a test-only route, an unknown path) or the answer is not JSON.
 */
export function contractProblems(exchange: {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  requestBody: unknown;
  responseBody: unknown;
  responseText: string;
}): string[] {
  const { document, operations } = load();
  const path = exchange.path.split('?')[0]!;
  const operation = operations.find((o) => o.method === exchange.method && o.pattern.test(path));
  if (!operation) return [];
  const method = operation.method.toLowerCase();
  const spec = document.paths[operation.template]![method]!;
  const where = `${operation.method} ${operation.template} → ${exchange.status}`;
  const problems: string[] = [];
  const response = spec.responses[String(exchange.status)];
  if (!response) problems.push(`${where}: this status is not in the document`);
  else if (exchange.contentType?.includes('json') && exchange.responseText) {
    const media = Object.keys(response.content ?? {}).find((m) => m.includes('json'));
    const check = media
      ? validator(
          pointer(
            'paths',
            operation.template,
            method,
            'responses',
            String(exchange.status),
            'content',
            media,
            'schema',
          ),
        )
      : null;
    if (!check) problems.push(`${where}: a JSON answer the document gives no JSON schema for`);
    else if (!check(exchange.responseBody))
      problems.push(`${where}: the answer does not match`, ...describe(check.errors));
  }
  if (exchange.status >= 200 && exchange.status < 300 && exchange.requestBody !== undefined) {
    const media = Object.keys(spec.requestBody?.content ?? {}).find((m) => m.includes('json'));
    const check = media
      ? validator(pointer('paths', operation.template, method, 'requestBody', 'content', media, 'schema'))
      : null;
    if (check && !check(exchange.requestBody))
      problems.push(`${where}: the document refuses a body the service took`, ...describe(check.errors));
  }
  return problems;
}

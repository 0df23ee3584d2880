import type { ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { ErrorCode } from '../domain/errors';
import { codeInFamily, errorFamilyOf, HTTP_STATUS } from './errors';
import type { AnyRoute } from './route';
import { PlainError, ValidationError } from './schemas/errors';

const BODY_METHODS = new Set(['post', 'put', 'patch']);

/**
 * The error answers one operation can really give, from the same declaration the router serves
 * it with: what every route can answer (invalid input, oversized headers, a failure of ours),
 * what its auth, rate limit, body and Idempotency-Key imply, and what its handler declares.
 * One response per HTTP status, listing each code with when; the body is the family's shape.
 */
export function errorResponsesOf(route: AnyRoute): Record<string, ResponseConfig> {
  const family = errorFamilyOf(route.path);
  const codes = new Map<ErrorCode, string[]>();
  const add = (code: ErrorCode, when: string) => {
    const key = codeInFamily(code, family);
    codes.set(key, [...(codes.get(key) ?? []), when]);
  };
  add(
    ErrorCode.BAD_REQUEST,
    'invalid input (every offending field named); a NUL, a lone surrogate or an over-long segment in the path or query',
  );
  if (BODY_METHODS.has(route.method)) {
    add(
      ErrorCode.BAD_REQUEST,
      'a body that is not JSON, not UTF-8, nested too deeply or holding a NUL, a lone surrogate or a reserved key',
    );
    add(ErrorCode.PAYLOAD_TOO_LARGE, "the body is over the route's limit");
    add(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'the body is not application/json, or is compressed');
  }
  if (route.auth) {
    add(
      ErrorCode.UNAUTHORISED,
      'missing, invalid or expired credentials, or a credential of a scheme this operation does not take',
    );
    add(
      ErrorCode.FORBIDDEN,
      route.auth.permission
        ? `no \`${route.auth.permission}\` permission for the organization, or no access to it`
        : 'no access to the organization',
    );
    if (route.auth.refuseWaitingList) add(ErrorCode.WAITING_LIST, 'the user is on the waiting list');
    if (route.auth.merchant) {
      add(ErrorCode.FORBIDDEN, `no \`${route.auth.merchant.permission}\` on the merchant`);
      add(ErrorCode.SERVICE_UNAVAILABLE, 'the resource-access service does not answer');
    }
    add(ErrorCode.TOO_MANY_REQUESTS, 'too many failed authentications from this address or against this user or key');
  }
  if (route.idempotent) {
    add(
      ErrorCode.IDEMPOTENCY_KEY_REUSED,
      'the Idempotency-Key was used with a different request (path parameters or body)',
    );
    add(
      ErrorCode.IDEMPOTENCY_REQUEST_IN_PROGRESS,
      'the first request with this Idempotency-Key is still running after IDEMPOTENCY_WAIT (an identical retry ' +
        'waits that long for its answer): resend the same request after Retry-After',
    );
  }
  if (route.callback) {
    add(ErrorCode.TOO_MANY_REQUESTS, 'too many callbacks from this source address');
    add(ErrorCode.FORBIDDEN, "a source address other than the provider's (when they are configured)");
  } else if (route.rateLimit !== false)
    add(ErrorCode.TOO_MANY_REQUESTS, "over the caller's or the organization's rate limit");
  for (const [code, when] of Object.entries(route.errors ?? {}) as [ErrorCode, string][]) add(code, when);
  add(ErrorCode.HEADERS_TOO_LARGE, 'request headers over 16 kB');
  // The routes without a rate limit are the operations ones (health, documents, keys), which call
  // no dependency (readiness answers its own 503).
  if (route.rateLimit !== false)
    add(
      ErrorCode.SERVICE_UNAVAILABLE,
      'a dependency (Postgres, Temporal, a provider) does not answer: send the request again after Retry-After seconds (with its Idempotency-Key, if it had one)',
    );
  add(ErrorCode.INTERNAL_SERVER_ERROR, 'an unexpected failure (the answer carries the request id)');

  const schema = family === 'validation' ? ValidationError : PlainError;
  const byStatus = new Map<number, string[]>();
  for (const [code, whens] of codes) {
    const status = HTTP_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), `\`${code}\`: ${whens.join('; ')}`]);
  }
  const out: Record<string, ResponseConfig> = {};
  for (const [status, lines] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: lines.join('. '),
      ...(status === 401 && {
        headers: {
          'WWW-Authenticate': {
            description: 'The scheme to authenticate with (`Bearer`).',
            schema: { type: 'string' },
          },
        },
      }),
      ...(status === 429 && {
        headers: { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'string' } } },
      }),
      content: { 'application/json': { schema } },
    };
  }
  return out;
}

import { isGrpcServiceError, NamespaceNotFoundError } from '@temporalio/client';
import { isConnectionError } from '../db/knex';
import { ErrorCode, type InvalidParam, ServiceError, SubCode } from '../domain/errors';

/** The one place an error code becomes an HTTP status (the README's error table mirrors it). */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  INVALID_PARAMS: 400,
  UNAUTHORISED: 401,
  FORBIDDEN: 403,
  WAITING_LIST: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
};

/**
 * Spec section 7 has two error families. The KYC, financing and internal endpoints answer every
 * error in the validation shape ({code, description, identifier, invalid_params}); the loan,
 * transaction, installment, agent, account and token endpoints answer {code, description}.
 * The family follows from the path alone, so errors raised before routing (authentication, an
 * unknown route, a malformed body) get the same shape as the route's own.
 */
export type ErrorFamily = 'validation' | 'plain';
const VALIDATION_FAMILY = /^\/(v1\/kyc|v1\/financing|v1\/internal|api\/internal)(\/|$)/;

export function errorFamilyOf(path: string): ErrorFamily {
  return VALIDATION_FAMILY.test(path) ? 'validation' : 'plain';
}

export interface PlainErrorBody {
  code: string;
  description: string;
}
export interface ValidationErrorBody extends PlainErrorBody {
  identifier: string;
  invalid_params: InvalidParam[];
}

/**
 * The code a family answers with: the validation family has no BAD_REQUEST (it names fields as
 * INVALID_PARAMS); the plain family has no INVALID_PARAMS (its shape has no field list).
 */
export function codeInFamily(code: ErrorCode, family: ErrorFamily): ErrorCode {
  if (family === 'validation' && code === ErrorCode.BAD_REQUEST) return ErrorCode.INVALID_PARAMS;
  if (family === 'plain' && code === ErrorCode.INVALID_PARAMS) return ErrorCode.BAD_REQUEST;
  return code;
}

/**
 * Shapes an error for its family. A field-level failure in the plain family is BAD_REQUEST with
 * the offending fields named in the description, since that shape has no field list.
 */
export function errorBody(
  error: ServiceError,
  family: ErrorFamily,
  requestId: string,
): PlainErrorBody | ValidationErrorBody {
  if (family === 'validation') {
    return {
      code: codeInFamily(error.code, family),
      description: error.message,
      identifier: requestId,
      invalid_params: error.invalidParams,
    };
  }
  if (error.code === ErrorCode.INVALID_PARAMS) {
    const fields = error.invalidParams.map((p) => `${p.path}: ${p.reason}`).join('; ');
    return { code: ErrorCode.BAD_REQUEST, description: fields ? `Invalid input: ${fields}` : 'Invalid input' };
  }
  if (error.code === ErrorCode.INTERNAL_SERVER_ERROR) {
    // The plain shape has no identifier field; the request id lets support find the log line.
    return { code: error.code, description: `${error.message} (request id ${requestId})` };
  }
  return { code: error.code, description: error.message };
}

/**
 * gRPC status codes of a Temporal server that does not answer (DEADLINE_EXCEEDED, UNAVAILABLE) or
 * will not take more now (RESOURCE_EXHAUSTED: a namespace's rate, or an execution's limit of
 * Updates in flight): nothing was done, the same request later goes through.
 */
const TEMPORAL_UNAVAILABLE = new Set([4, 8, 14]);
/** Seconds a client is told to wait before trying again while a dependency is down. */
export const DEPENDENCY_RETRY_AFTER = 5;

/**
 * Whether `thrown` (or what it wraps: the Temporal client wraps gRPC errors, fetch its socket
 * error) says a dependency could not be reached: Postgres, Temporal, or a provider's connection
 * refused or cut. The answer is then 503 with Retry-After, not 500: the client may send the same
 * request again (with its Idempotency-Key) shortly.
 */
export function isDependencyUnavailable(thrown: unknown): boolean {
  for (let error = thrown, depth = 0; error && depth < 5; error = (error as { cause?: unknown }).cause, depth++) {
    if (isConnectionError(error)) return true;
    if (isGrpcServiceError(error) && TEMPORAL_UNAVAILABLE.has(error.code)) return true;
    // The namespace not found (the API's client has one, its own): the Temporal server on
    // PostgreSQL answers so for a second or so after its database comes back, until its namespace
    // cache is filled again. Nothing was started; the same request sent again goes through. (A
    // namespace that does not exist at all stops the workers at their start, so it is not missed.)
    if (error instanceof NamespaceNotFoundError) return true;
  }
  return false;
}

/**
 * Turns anything thrown into a ServiceError: our own pass through; a dependency that does not
 * answer is 503; the http-errors that Koa, the router and the body parser raise map by status;
 * everything else is a 500.
 */
export function toServiceError(thrown: unknown): ServiceError {
  if (thrown instanceof ServiceError) return thrown;
  if (isDependencyUnavailable(thrown))
    return new ServiceError(
      ErrorCode.SERVICE_UNAVAILABLE,
      `The service is briefly unavailable: try again in ${DEPENDENCY_RETRY_AFTER} seconds`,
      [],
      { 'Retry-After': String(DEPENDENCY_RETRY_AFTER) },
    );
  const status = typeof thrown === 'object' && thrown !== null ? (thrown as { status?: unknown }).status : undefined;
  const type = typeof thrown === 'object' && thrown !== null ? (thrown as { type?: unknown }).type : undefined;
  if (type === 'entity.parse.failed' || (status === 400 && thrown instanceof SyntaxError)) {
    return new ServiceError(ErrorCode.INVALID_PARAMS, 'The request body is not valid JSON', [
      { path: 'body', reason: 'malformed JSON', sub_code: SubCode.MALFORMED_JSON },
    ]);
  }
  switch (status) {
    case 400:
      return new ServiceError(ErrorCode.BAD_REQUEST, 'Invalid input');
    case 404:
      return new ServiceError(ErrorCode.NOT_FOUND);
    case 405:
      return new ServiceError(ErrorCode.METHOD_NOT_ALLOWED);
    case 413:
      return new ServiceError(ErrorCode.PAYLOAD_TOO_LARGE);
    case 415:
      return new ServiceError(ErrorCode.UNSUPPORTED_MEDIA_TYPE);
    case 501:
      return new ServiceError(ErrorCode.METHOD_NOT_ALLOWED);
    default:
      return new ServiceError(ErrorCode.INTERNAL_SERVER_ERROR);
  }
}

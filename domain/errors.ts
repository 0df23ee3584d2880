/**
 * The service's error codes, one enumeration shared by routes, activities and workflows.
 * HTTP statuses live in api/errors.ts; this module stays free of I/O so workflows can import it.
 */
export const ErrorCode = {
  BAD_REQUEST: 'BAD_REQUEST',
  INVALID_PARAMS: 'INVALID_PARAMS',
  UNAUTHORISED: 'UNAUTHORISED',
  FORBIDDEN: 'FORBIDDEN',
  WAITING_LIST: 'WAITING_LIST',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  CONFLICT: 'CONFLICT',
  /** 409: the Idempotency-Key was already used by this caller on this route with a different request. */
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  /** 409: the first request with this Idempotency-Key is still running; retry later for its answer. */
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  /** 431: the request's headers are larger than the server reads (Node's limit, 16 kB). */
  HEADERS_TOO_LARGE: 'HEADERS_TOO_LARGE',
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Why a field was refused; the values of `invalid_params[].sub_code`. */
export const SubCode = {
  REQUIRED: 'REQUIRED',
  INVALID_TYPE: 'INVALID_TYPE',
  INVALID_UUID: 'INVALID_UUID',
  INVALID_FORMAT: 'INVALID_FORMAT',
  INVALID_ENUM: 'INVALID_ENUM',
  INVALID_VALUE: 'INVALID_VALUE',
  TOO_SHORT: 'TOO_SHORT',
  TOO_LONG: 'TOO_LONG',
  OUT_OF_RANGE: 'OUT_OF_RANGE',
  UNKNOWN_FIELD: 'UNKNOWN_FIELD',
  MALFORMED_JSON: 'MALFORMED_JSON',
  NOT_ALLOWED: 'NOT_ALLOWED',
  /** A NUL character, a lone UTF-16 surrogate or bytes that are not UTF-8: nothing downstream can store them. */
  INVALID_CHARACTERS: 'INVALID_CHARACTERS',
  /** JSON nested deeper than the input guard allows. */
  TOO_DEEP: 'TOO_DEEP',
  /** `__proto__`, `constructor` or `prototype` as a JSON key: refused, never merged into an object. */
  RESERVED_KEY: 'RESERVED_KEY',
} as const;
export type SubCode = (typeof SubCode)[keyof typeof SubCode];

export interface InvalidParam {
  /** Where the offending value is: `body.amount.value`, `path.id`, `query.size`, `header.idempotency-key`. */
  path: string;
  reason: string;
  sub_code: SubCode | string;
}

/** An expected failure with a code from ErrorCode; anything else thrown is a 500. */
export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    description?: string,
    readonly invalidParams: InvalidParam[] = [],
    /** Extra response headers, e.g. Retry-After on TOO_MANY_REQUESTS. */
    readonly headers: Record<string, string> = {},
  ) {
    super(description ?? DEFAULT_DESCRIPTION[code]);
    this.name = 'ServiceError';
  }
}

/** The descriptions the spec shows (section 7), and plain ones for the rest. */
export const DEFAULT_DESCRIPTION: Record<ErrorCode, string> = {
  BAD_REQUEST: 'Bad Request',
  INVALID_PARAMS: 'Invalid parameters',
  UNAUTHORISED: 'Unauthorised',
  FORBIDDEN: 'Forbidden',
  WAITING_LIST: 'User is in the waiting list',
  NOT_FOUND: 'Not Found',
  METHOD_NOT_ALLOWED: 'Method Not Allowed',
  CONFLICT: 'Conflict',
  IDEMPOTENCY_KEY_REUSED: 'Idempotency-Key reused with a different request body',
  IDEMPOTENCY_REQUEST_IN_PROGRESS:
    'The first request with this Idempotency-Key is still executing: resend the same request after Retry-After to get its answer (it never executes twice)',
  PAYLOAD_TOO_LARGE: 'Payload Too Large',
  UNSUPPORTED_MEDIA_TYPE: 'Unsupported Media Type: send application/json',
  HEADERS_TOO_LARGE: 'Request Header Fields Too Large',
  TOO_MANY_REQUESTS: 'Too Many Requests',
  INTERNAL_SERVER_ERROR: 'Internal Server Error',
  SERVICE_UNAVAILABLE: 'Service Unavailable',
};

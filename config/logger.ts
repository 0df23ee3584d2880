import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Redaction is a second line of defence: nothing should hand a token, an
 * OTP or an image to the logger in the first place, but if a field of that name slips into a
 * log object it is censored.
 */
const SECRET_FIELDS = [
  'authorization',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'otp',
  'otp_code',
  'password',
  'selfie',
  'document_front',
  'document_back',
  'liveness_images',
  // Provider credentials: M-Pesa's SecurityCredential and (reversible) Password, KYC signatures and keys.
  'SecurityCredential',
  'Password',
  'signature',
  'smileid-api-key',
  'smileid-token',
  // The SMS gateway's key header.
  'apiKey',
  // Webhook endpoints' signing secrets.
  'secret',
  'previous_secret',
];
/**
 * Secret field names at the top level and one level down under the usual containers. Explicit
 * paths, not `*.` wildcards: wildcard redaction costs several microseconds on every log call.
 */
export const REDACTED_PATHS = [
  ...SECRET_FIELDS,
  ...['headers', 'body', 'input', 'request', 'response'].flatMap((parent) =>
    SECRET_FIELDS.map((f) => `${parent}.${f}`),
  ),
];

/**
 * Logs go to stdout through an asynchronous buffered writer unless a destination is given;
 * pino flushes it when the process exits.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'lending-service' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

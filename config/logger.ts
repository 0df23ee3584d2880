import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Redaction is a second line of defence: nothing should hand a token, an
 * OTP or an image to the logger in the first place, but if a field of that name slips into a
 * log object it is censored.
 */
export const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'token',
  '*.token',
  'access_token',
  'refresh_token',
  'id_token',
  'otp',
  'otp_code',
  '*.otp_code',
  'password',
  'selfie',
  'document_front',
  'document_back',
  'liveness_images',
  '*.selfie',
  '*.document_front',
  '*.document_back',
  '*.liveness_images',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'lending-service' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

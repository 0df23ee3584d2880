import { z } from 'zod';
import { parseByteSize, parseDuration } from './duration';

/**
 * Every setting of the service, read once from the environment. A wrong value stops start-up
 * with a message naming the variable (see ConfigError). Durations are milliseconds once parsed.
 */
const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected a duration such as 30s, 15m or 1h, got "${text}"` });
        return z.NEVER;
      }
      return ms;
    });

const byteSize = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const bytes = parseByteSize(text);
      if (bytes === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected a size such as 100kb or 15mb, got "${text}"` });
        return z.NEVER;
      }
      return bytes;
    });

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(z.url().optional());
const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: port(3000),
  /** Public base address of the API, used in links such as callback URLs. Defaults to http://HOST:PORT. */
  PUBLIC_BASE_URL: optionalUrl,
  BODY_LIMIT: byteSize('100kb'),
  /** The verification routes carry base64 selfies, documents and liveness frames. */
  BODY_LIMIT_VERIFICATION: byteSize('20mb'),

  /** Postgres connection string; when absent, `npm start` and `npm test` run an embedded PostgreSQL. */
  DATABASE_URL: optionalUrl,
  DATABASE_POOL_MAX: positiveInt(10),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_POSTGRES_PORT: port(54329),

  /** Temporal frontend address; when absent, `npm start` runs a Temporal dev server. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('lending-service'),
  TEMPORAL_DEV_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  WORKER_METRICS_PORT: port(9464),
  WORKER_SHUTDOWN_GRACE: duration('30s'),
  READINESS_TIMEOUT: duration('2s'),

  /** How long a submitted KYC job may stay with the provider before the expiry sweep looks at it. */
  KYC_SUBMISSION_WINDOW: duration('24h'),
  KYC_CALLBACK_WAIT: duration('30m'),
  KYC_STATUS_RECOVERY_TIMEOUT: duration('5s'),
  KYC_EXPIRY_SWEEP_INTERVAL: duration('15m'),
  STK_PUSH_CALLBACK_WAIT: duration('2m'),
  B2C_RESULT_WAIT: duration('5m'),
  OTP_LIFETIME: duration('5m'),
  IDEMPOTENCY_KEY_TTL: duration('24h'),
  RATE_LIMIT_MEMORY: flag(false),
});

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment once; throws ConfigError naming every wrong variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set", as a shell `FOO= npm start` intends.
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(given);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? '?'), message: issue.message })),
  );
}

import { isIP } from 'node:net';
import { z } from 'zod';
import { parseByteSize, parseDuration } from './duration';

/**
 * Every setting of the service, read once from the environment. A wrong value stops start-up
 * with a message naming the variable (see ConfigError). Durations are milliseconds once parsed.
 */
/** A string setting parsed by `parse`, refused with `hint` when it returns undefined. */
const parsed = (fallback: string, parse: (text: string) => number | undefined, hint: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const value = parse(text);
      if (value === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected ${hint}, got "${text}"` });
        return z.NEVER;
      }
      return value;
    });
const duration = (fallback: string) => parsed(fallback, parseDuration, 'a duration such as 30s, 15m or 1h');
const byteSize = (fallback: string) => parsed(fallback, parseByteSize, 'a size such as 100kb or 15mb');

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

/** A calendar date (YYYY-MM-DD), as the midnight UTC it starts at. */
const date = (fallback: string) =>
  z.iso
    .date()
    .default(fallback)
    .transform((day) => new Date(`${day}T00:00:00Z`));

/** Comma-separated IP addresses and CIDR blocks (`196.201.214.0/24`); empty means no list. */
const addressList = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const entries = text
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    for (const entry of entries) {
      const [address = '', prefix] = entry.split('/');
      const family = isIP(address);
      const bits = family === 6 ? 128 : 32;
      if (family === 0 || (prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= bits))) {
        ctx.addIssue({ code: 'custom', message: `expected IP addresses or CIDR blocks, got "${entry}"` });
        return z.NEVER;
      }
    }
    return entries;
  });

const financingIssuers = z
  .string()
  .default('[]')
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'expected a JSON array of financing issuers' });
      return z.NEVER;
    }
  })
  .pipe(
    z.array(
      z.strictObject({
        issuer: z.string().min(1),
        jwks_url: z.url(),
        audience: z.string().min(1).optional(),
        /** Where merchant-scoped permissions are checked: our database, or an HTTP resource-access service. */
        resource_access: z.union([z.literal('database'), z.strictObject({ url: z.url() })]),
      }),
    ),
  );
export type FinancingIssuer = z.output<typeof financingIssuers>[number];

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  HOST: z.string().min(1).default('127.0.0.1'),
  /** Trust X-Forwarded-For from a load balancer in front of the API. */
  TRUST_PROXY: flag(false),
  /**
   * With TRUST_PROXY, how many proxies in front of the API append to X-Forwarded-For: the client
   * is that many entries from the right (entries further left are the client's own words).
   */
  TRUST_PROXY_HOPS: positiveInt(1),
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

  /** The identity-verification provider (a simulator under npm start and the tests). */
  KYC_PROVIDER_URL: optionalUrl,
  KYC_PARTNER_ID: z.string().min(1).optional(),
  KYC_API_KEY: z.string().min(1).optional(),
  KYC_PROVIDER_NAME: z.string().min(1).default('smile_identity'),
  /** Largest decoded image a verification accepts (selfie, document side or liveness frame). */
  KYC_MAX_IMAGE_BYTES: byteSize('5mb'),
  KYC_LIVENESS_MIN_IMAGES: z.coerce.number().int().min(0).default(3),
  KYC_LIVENESS_MAX_IMAGES: z.coerce.number().int().min(1).default(8),
  KYC_CONSENT_REQUIRED: flag(true),
  KYC_PRIVACY_POLICY_URL: z.url().default('https://lending-service.example/privacy'),
  /** After this many rejected submissions an application may not be submitted again for a while. */
  KYC_MAX_RESUBMISSIONS: z.coerce.number().int().min(0).default(3),
  KYC_REAPPLY_BLOCK: duration('30d'),
  /** How long a submitted KYC job may stay with the provider before the expiry sweep looks at it. */
  KYC_SUBMISSION_WINDOW: duration('24h'),
  KYC_CALLBACK_WAIT: duration('30m'),
  KYC_STATUS_RECOVERY_TIMEOUT: duration('5s'),
  /** GET status asks the provider first when a pending verification has not heard from it for this long. */
  KYC_STATUS_STALE_AFTER: duration('2m'),
  KYC_EXPIRY_SWEEP_INTERVAL: duration('15m'),
  /** Applications the sweep asks the provider about per batch (per activity). */
  KYC_SWEEP_BATCH_SIZE: positiveInt(500),
  /** Provider status lookups one sweep batch keeps in flight. */
  KYC_SWEEP_CONCURRENCY: positiveInt(8),
  /** The mobile-money provider (a simulator under npm start and the tests). */
  MOBILE_MONEY_URL: optionalUrl,
  MOBILE_MONEY_CONSUMER_KEY: z.string().min(1).optional(),
  MOBILE_MONEY_CONSUMER_SECRET: z.string().min(1).optional(),
  /** Paybill number, or the store number when MOBILE_MONEY_TILL_NUMBER makes pushes Buy Goods. */
  MOBILE_MONEY_SHORT_CODE: z
    .string()
    .regex(/^\d{5,7}$/)
    .optional(),
  MOBILE_MONEY_PASSKEY: z.string().min(1).optional(),
  MOBILE_MONEY_TILL_NUMBER: z
    .union([z.literal(''), z.string().regex(/^\d{5,7}$/)])
    .optional()
    .transform((v) => v || undefined),
  MOBILE_MONEY_INITIATOR_NAME: z.string().min(1).optional(),
  MOBILE_MONEY_SECURITY_CREDENTIAL: z.string().min(1).optional(),
  STK_PUSH_CALLBACK_WAIT: duration('2m'),
  /** After the callback wait, how often and for how long the provider is asked before the push is given up as failed. */
  STK_PUSH_QUERY_INTERVAL: duration('15s'),
  STK_PUSH_QUERY_DEADLINE: duration('10m'),
  /**
   * How long send-money waits for the B2C result or queue timeout (the provider always sends
   * one). Past it the payout is FAILED with NO_RESULT and its hold released.
   */
  SEND_MONEY_RESULT_WAIT: duration('24h'),
  /**
   * Require the provider's status query before every paid push, even when its callback is
   * complete and consistent (a failure is always confirmed that way). Costs one provider call
   * per push; see the money benchmark.
   */
  STK_PUSH_CONFIRM_SUCCESS: flag(false),
  /** When set, mobile-money callbacks are taken only from these source addresses (the provider's published ones). */
  MOBILE_MONEY_CALLBACK_SOURCES: addressList,
  /** When set, identity-verification callbacks are taken only from these source addresses. */
  KYC_CALLBACK_SOURCES: addressList,
  /** Largest provider callback body (413 beyond): a real one is under 4 kB. */
  CALLBACK_BODY_LIMIT: byteSize('16kb'),
  /** Callbacks stored raw per transaction or KYC application; more are counted and logged, not stored. */
  CALLBACKS_STORED_PER_RESOURCE: positiveInt(20),
  /** How long raw provider callbacks are kept; older ones are purged by the callback-retention schedule. */
  CALLBACK_RETENTION: duration('90d'),
  /** How often the callback-retention schedule runs. */
  CALLBACK_PURGE_INTERVAL: duration('1h'),
  IDEMPOTENCY_KEY_TTL: duration('24h'),
  /**
   * How long a running Idempotency-Key request holds its key without renewing it (it renews while
   * it runs): past it the executor is taken for dead and a retry executes instead.
   */
  IDEMPOTENCY_LOCK_TIMEOUT: duration('60s'),
  /** How often the idempotency-key-purge schedule deletes expired keys. */
  IDEMPOTENCY_PURGE_INTERVAL: duration('10m'),
  RATE_LIMIT_MEMORY: flag(false),
  /** Requests per RATE_LIMIT_WINDOW for one caller, and for all callers of one organization together. */
  RATE_LIMIT_CALLER_POINTS: positiveInt(300),
  RATE_LIMIT_ORGANIZATION_POINTS: positiveInt(3000),
  RATE_LIMIT_WINDOW: duration('1m'),
  /** Provider callbacks per RATE_LIMIT_WINDOW from one source address (a budget of their own). */
  RATE_LIMIT_CALLBACK_POINTS: positiveInt(600),
  /**
   * Failed authentications per RATE_LIMIT_WINDOW from one source address, and against one target
   * (a user, an API key prefix) from all addresses together; past it, 429 before any verification.
   */
  RATE_LIMIT_AUTH_FAILURE_POINTS: positiveInt(20),
  /** How often an API instance adds its spending to the shared counters and reads theirs back. */
  RATE_LIMIT_SYNC_INTERVAL: duration('100ms'),

  /** Backend bearer scheme: the identity provider's JWKS, issuer and the audience of our API. */
  AUTH_JWKS_URL: optionalUrl,
  AUTH_ISSUER: z.string().min(1).optional(),
  AUTH_AUDIENCE: z.string().min(1).default('lending-service'),
  AUTH_CLOCK_TOLERANCE: duration('30s'),
  /** Larger Authorization headers are refused before any parsing. */
  AUTH_MAX_HEADER_BYTES: byteSize('8kb'),
  AUTH_JWKS_CACHE_MAX_AGE: duration('10m'),
  /** After a fetch, an unknown kid triggers another JWKS fetch only after this long. */
  AUTH_JWKS_COOLDOWN: duration('30s'),
  /** Resolved callers (user, roles, API key) are cached this long: revocations take effect within it. */
  AUTH_CALLER_CACHE_TTL: duration('30s'),
  /** Financing bearer scheme: the trusted issuers, as JSON. */
  FINANCING_ISSUERS: financingIssuers,
  FINANCING_AUDIENCE: z.string().min(1).default('lending-service'),

  /** Deprecated operations and channels: when they were deprecated (RFC 9745) and their sunset (RFC 8594). */
  DEPRECATED_SINCE: date('2026-07-01'),
  DEPRECATION_SUNSET: date('2027-07-01'),

  /** Tokens this service issues (partner exchange, sessions and refresh). */
  SERVICE_TOKEN_ISSUER: z.string().min(1).default('lending-service'),
  SERVICE_TOKEN_AUDIENCE: z.string().min(1).default('lending-service'),
  SERVICE_TOKEN_TTL: duration('1h'),
  /**
   * The `aud` a partner's JWT must carry at /v1/auth/exchange: distinct from every other
   * audience, so no token minted for another purpose can be exchanged.
   */
  PARTNER_EXCHANGE_AUDIENCE: z.string().min(1).default('lending-service:exchange'),
  REFRESH_TOKEN_TTL: duration('30d'),
  /** The service's private RS256 signing key as a JWK (JSON, with kid). Generated for npm start and tests. */
  SERVICE_SIGNING_KEY: z.string().min(1).optional(),

  /** Port of the development identity provider simulator under npm start. */
  DEV_IDP_PORT: port(3101),
  /** Port of the identity-verification provider simulator under npm start. */
  KYC_SIMULATOR_PORT: port(3102),
  /** Port of the mobile-money provider simulator under npm start. */
  MOBILE_MONEY_SIMULATOR_PORT: port(3103),
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

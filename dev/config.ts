import { z } from 'zod';
import { configShape, parseEnvironment } from '../config';
import { port, positiveInt } from '../config/fields';

/** Settings only `npm start`, the dev CLIs, the test harness and the benchmarks read. */
const devSettings = {
  /** Where `npm start` keeps its embedded Postgres, Temporal data and generated keys. */
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_POSTGRES_PORT: port(54329),
  TEMPORAL_DEV_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  /** An existing Temporal CLI binary (otherwise PATH, the cache, or a build with Go). */
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  /** Port of the development identity provider simulator under npm start. */
  DEV_IDP_PORT: port(3101),
  /** Port of the identity-verification provider simulator under npm start. */
  KYC_SIMULATOR_PORT: port(3102),
  /** Its TLS port (official SDKs force https). */
  KYC_SIMULATOR_TLS_PORT: port(3112),
  /** Port of the mobile-money provider simulator under npm start. */
  MOBILE_MONEY_SIMULATOR_PORT: port(3103),
  /** Its TLS port (clients that force https). */
  MOBILE_MONEY_SIMULATOR_TLS_PORT: port(3113),
  /** Ports of the SMS gateway, e-mail provider and bank simulators under npm start. */
  SMS_SIMULATOR_PORT: port(3104),
  EMAIL_SIMULATOR_PORT: port(3105),
  BANK_SIMULATOR_PORT: port(3106),
  /** The local S3-compatible store under npm start (versitygw), and an existing binary of it. */
  OBJECT_STORE_PORT: port(3107),
  OBJECT_STORE_BIN: z.string().min(1).optional(),
  /** Port of the invoice-extraction provider simulator under npm start. */
  EXTRACTION_SIMULATOR_PORT: port(3108),
  /** Port of the webhook receiver simulator npm start registers for the demo organization. */
  WEBHOOK_RECEIVER_PORT: port(3109),
  /** `npm run cluster`: API processes (behind its proxy on PORT, themselves on PORT+1…) and worker processes. */
  CLUSTER_API_INSTANCES: positiveInt(2),
  CLUSTER_WORKER_INSTANCES: positiveInt(2),
  /** The frontend port of the Temporal server `npm run cluster` runs on Postgres (its other services above it). */
  TEMPORAL_SERVER_PORT: port(7633),
};

const devConfigSchema = z.object({ ...configShape, ...devSettings });

/** The service's settings and the development ones. */
export type DevConfig = z.output<typeof devConfigSchema>;

export function loadDevConfig(env: NodeJS.ProcessEnv = process.env): DevConfig {
  return parseEnvironment(devConfigSchema, env);
}

import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../config/logger';
import type { Clock } from '../domain/clock';
import type { Providers } from '../providers';
import type { ServiceKeys } from './auth/service-keys';

/** Everything the API is built from; tests build it with their own. */
export interface AppDeps {
  config: Config;
  db: Knex;
  temporal: Client;
  providers: Providers;
  logger: Logger;
  clock: Clock;
  /** The key the service signs its own tokens with (see api/auth/service-keys.ts). */
  serviceKeys: ServiceKeys;
}

/**
 * What one route factory or helper takes: the dependencies it names and, of the configuration,
 * only the keys it reads, so its signature says what it touches and a test builds it with no more.
 */
export type Needs<D extends Exclude<keyof AppDeps, 'config'>, C extends keyof Config = never> = Pick<AppDeps, D> &
  ([C] extends [never] ? unknown : { config: Pick<Config, C> });

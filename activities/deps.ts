import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../config/logger';
import type { Clock } from '../domain/clock';
import type { Providers } from '../providers';

/** What activities are built from; one instance per worker process, no module-level state. */
export interface ActivityDeps {
  config: Config;
  db: Knex;
  providers: Providers;
  logger: Logger;
  clock: Clock;
  /** To signal another workflow from a step (a repayment handed to its loan's run). */
  temporal: Client;
}

/**
 * What one factory takes: the dependencies it names and, of the configuration, only the keys it
 * reads, so a factory's signature says what it touches and a test builds it with no more.
 */
export type Needs<D extends Exclude<keyof ActivityDeps, 'config'>, C extends keyof Config = never> = Pick<
  ActivityDeps,
  D
> &
  ([C] extends [never] ? unknown : { config: Pick<Config, C> });

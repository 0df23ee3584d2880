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

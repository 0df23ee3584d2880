import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../config/logger';
import type { Clock } from '../domain/clock';
import type { Providers } from '../providers';
import { createCallbackActivities } from './platform/callback-retention';
import { createIdempotencyPurgeActivities } from './platform/idempotency-purge';
import { createKycActivities } from './kyc/verification';
import { createKycSweepActivities } from './kyc/expiry-sweep';
import { createCurrentAccountActivities } from './current-account/index';
import { createFinancingActivities } from './financing/index';
import { createLoanActivities } from './loans/index';
import { createMobileMoneyActivities } from './mobile-money/index';

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
 * Every activity of the service, from one factory per area. Workflows import the type only:
 * `proxyActivities<Activities>(...)`, so no I/O module enters the workflow bundle.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createKycActivities(deps),
    ...createKycSweepActivities(deps),
    ...createMobileMoneyActivities(deps),
    ...createLoanActivities(deps),
    ...createCurrentAccountActivities(deps),
    ...createFinancingActivities(deps),
    ...createCallbackActivities(deps),
    ...createIdempotencyPurgeActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
/** Each area's activities: a workflow proxies only its own area's. */
export type KycActivities = ReturnType<typeof createKycActivities> & ReturnType<typeof createKycSweepActivities>;
export type MobileMoneyActivities = ReturnType<typeof createMobileMoneyActivities>;
export type LoanActivities = ReturnType<typeof createLoanActivities>;
export type CurrentAccountActivities = ReturnType<typeof createCurrentAccountActivities>;
export type FinancingActivities = ReturnType<typeof createFinancingActivities>;
export type PlatformActivities = ReturnType<typeof createCallbackActivities> &
  ReturnType<typeof createIdempotencyPurgeActivities>;

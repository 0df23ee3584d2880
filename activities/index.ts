import type { ActivityDeps } from './deps';
import { createCurrentAccountActivities } from './current-account/index';
import { createFinancingActivities } from './financing/index';
import { createKycActivities } from './kyc/index';
import { createLoanActivities } from './loans/index';
import { createMobileMoneyActivities } from './mobile-money/index';
import { createPlatformActivities } from './platform/index';
import { createWebhookActivities } from './webhooks/index';

/**
 * Every activity of the service, from one factory per area. Workflows import the type only:
 * `proxyActivities<Activities>(...)`, so no I/O module enters the workflow bundle.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createKycActivities(deps),
    ...createMobileMoneyActivities(deps),
    ...createLoanActivities(deps),
    ...createCurrentAccountActivities(deps),
    ...createFinancingActivities(deps),
    ...createPlatformActivities(deps),
    ...createWebhookActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
/** Each area's activities: a workflow proxies only its own area's. */
export type KycActivities = ReturnType<typeof createKycActivities>;
export type MobileMoneyActivities = ReturnType<typeof createMobileMoneyActivities>;
export type LoanActivities = ReturnType<typeof createLoanActivities>;
export type CurrentAccountActivities = ReturnType<typeof createCurrentAccountActivities>;
export type FinancingActivities = ReturnType<typeof createFinancingActivities>;
export type PlatformActivities = ReturnType<typeof createPlatformActivities>;
export type WebhookActivities = ReturnType<typeof createWebhookActivities>;

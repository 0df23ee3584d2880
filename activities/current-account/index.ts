import { createActivationActivities } from './activation';
import { createEmailVerificationActivities } from './email-verification';
import { createPhoneChangeActivities } from './phone-change';
import { createSendingActivities } from './sending';

/**
 * Steps of the current-account self-service workflows (activation, e-mail verification,
 * mobile-number change): sending codes and links, the bank's onboarding and number change, and
 * the rows that project each run's state, one file per job.
 */
export function createCurrentAccountActivities(deps: Parameters<typeof createSendingActivities>[0]) {
  return {
    ...createSendingActivities(deps),
    ...createActivationActivities(deps),
    ...createEmailVerificationActivities(deps),
    ...createPhoneChangeActivities(deps),
  };
}

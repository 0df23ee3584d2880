import { createStkPushActivities } from './stk-push';
import { createSendMoneyActivities } from './send-money';

export { callbackUrls } from './shared';

/** The mobile-money activities: collections (stk-push) and payouts (send-money). */
export function createMobileMoneyActivities(
  deps: Parameters<typeof createStkPushActivities>[0] & Parameters<typeof createSendMoneyActivities>[0],
) {
  return { ...createStkPushActivities(deps), ...createSendMoneyActivities(deps) };
}

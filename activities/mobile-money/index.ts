import { createCollectionActivities } from './stk-push';
import { createPayoutActivities } from './send-money';

export { callbackUrls } from './shared';

/** The mobile-money activities: collections (stk-push) and payouts (send-money). */
export function createMobileMoneyActivities(
  deps: Parameters<typeof createCollectionActivities>[0] & Parameters<typeof createPayoutActivities>[0],
) {
  return { ...createCollectionActivities(deps), ...createPayoutActivities(deps) };
}

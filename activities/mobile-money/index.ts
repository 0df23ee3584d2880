import type { ActivityDeps } from '../deps';
import { createCollectionActivities } from './collections';
import { createPayoutActivities } from './payouts';

export { callbackUrls } from './shared';

/** The mobile-money activities: collections (stk-push) and payouts (send-money). */
export function createMobileMoneyActivities(deps: ActivityDeps) {
  return { ...createCollectionActivities(deps), ...createPayoutActivities(deps) };
}

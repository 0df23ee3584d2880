import { CURRENT_ACCOUNT_EXERCISES } from './authorization-routes-current-account';
import { FINANCING_AND_AGENT_EXERCISES } from './authorization-routes-financing-agents';
import { IDENTITY_EXERCISES } from './authorization-routes-identity';
import { MONEY_EXERCISES } from './authorization-routes-money';
import { WEBHOOK_EXERCISES } from './authorization-routes-webhooks';
import type { Exercise } from './authorization-exercise';

/** Every route's exercise, keyed as RULES is; the test fails on a route that has no row in either. */
export const EXERCISES: Record<string, Exercise> = {
  ...IDENTITY_EXERCISES,
  ...MONEY_EXERCISES,
  ...CURRENT_ACCOUNT_EXERCISES,
  ...FINANCING_AND_AGENT_EXERCISES,
  ...WEBHOOK_EXERCISES,
};

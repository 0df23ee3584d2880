import { z } from 'zod';
import { agentSettings } from './agents';
import { authSettings } from './auth';
import { currentAccountSettings } from './current-account';
import { financingSettings } from './financing';
import { kycSettings } from './kyc';
import { loanSettings } from './loans';
import { mobileMoneySettings } from './mobile-money';
import { platformSettings } from './platform';
import { webhookSettings } from './webhooks';

export type { FinancingIssuer } from './auth';

/**
 * Every setting of the service, read once from the environment and composed from one fragment
 * per area; the settings only `npm start` and the dev tools read live in dev/config.ts. A wrong
 * value stops start-up with a message naming the variable (see ConfigError). Durations are
 * milliseconds once parsed.
 */
export const configShape = {
  ...platformSettings,
  ...authSettings,
  ...kycSettings,
  ...mobileMoneySettings,
  ...loanSettings,
  ...currentAccountSettings,
  ...financingSettings,
  ...webhookSettings,
  ...agentSettings,
};
export const configSchema = z.object(configShape);

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment with `schema`; throws ConfigError naming every wrong variable. */
export function parseEnvironment<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.output<S> {
  // An empty variable means "not set", as a shell `FOO= npm start` intends.
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(given);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? '?'), message: issue.message })),
  );
}

/** The service's configuration from the environment (once, at start-up). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseEnvironment(configSchema, env);
}

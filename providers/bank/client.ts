import { createMobileNumberChanges } from './mobile-number';
import { createOnboarding } from './onboarding';
import type { BankClient, BankClientOptions } from './protocol';
import { createBankTransport } from './transport';

/**
 * The bank client (see protocol.ts): a cached OAuth token (refreshed before it expires, and once
 * more when the bank calls it invalid: a 401 was not acted on), JSON calls with our reference as
 * the Idempotency-Key, and every failure as a BankError classed indeterminate or transient. It
 * never resends a submission on its own: after an indeterminate one the caller reads the status.
 * This module composes the operations: ./onboarding.ts and ./mobile-number.ts, both over
 * ./transport.ts (the token, exchanges, error classes).
 */
export function createBankClient(options: BankClientOptions): BankClient {
  const transport = createBankTransport(options);
  return {
    ...createOnboarding(transport),
    ...createMobileNumberChanges(transport),
  };
}

import { createCollections } from './collections';
import { createPayouts } from './payouts';
import type { MobileMoneyClient, MobileMoneyClientOptions } from './protocol';
import { createMobileMoneyTransport } from './transport';

/**
 * Client of the mobile-money provider: OAuth with a cached token, push prompt (STK push) with
 * its status query, send money (B2C) and the Transaction Status query that asks about a payout
 * whose result did not come, over keep-alive HTTP. Its types and edge conversions
 * are ./protocol.ts; its callbacks are read by ./callbacks.ts.
 * This module composes the operations: ./collections.ts (STK push and query) and ./payouts.ts
 * (B2C and Transaction Status), both over ./transport.ts (the token, exchanges, error classes).
 */
export function createMobileMoneyClient(options: MobileMoneyClientOptions): MobileMoneyClient {
  const transport = createMobileMoneyTransport(options);
  return {
    accessToken: transport.accessToken,
    ...createCollections(transport, options),
    ...createPayouts(transport, options),
  };
}

import { bodyParser } from '@koa/bodyparser';
import { startSimulatorServer } from '../server';
import { ERROR_CODES } from '../../providers/bank/protocol';
import { bankApi, fail } from './api';
import { bankControl } from './control';
import type { BankSimulatorOptions, RunningBankSimulator } from './model';
import { createBankState } from './state';

/**
 * The bank simulator (see protocol.ts), refusing what the bank refuses: a token request without
 * the client's Basic credentials (401 invalid_client) or another grant (400); an API call without
 * a live token (401); a body that is not JSON (415, or 400 INVALID_JSON), lacks the
 * Idempotency-Key, or breaks the schema (400 VALIDATION_ERROR naming the fields): unknown fields,
 * dates that are not real past dates, numbers not `+2547`/`+2541`, images that are not base64
 * JPEG or PNG by their magic bytes, a missing back side for an ID card. Then the decisions: a
 * live customer with the same document (409 DUPLICATE_CUSTOMER), a number another customer holds
 * (409 NUMBER_TAKEN), under 18 (422 UNDERAGE), and the mode's.
 *
 * Control API (tests): `PATCH /_control/mode` sets the decisions (`onboarding`, `mobileChange`:
 * approve, pending, reject, error (acted on, then HTTP 500), timeout (acted on, then no answer
 * until the client gives up), throttle (429, nothing done); `decisionDelayMs` before a pending
 * one is decided, `pendingDecision` approve or reject, `onboardingRejection` the code a rejected
 * onboarding gets; a rejected change is NUMBER_TAKEN). `GET /_control/customers` lists every
 * onboarding recorded (images as type, size and sha256), `GET /_control/mobile-number-changes`
 * every change, `GET /_control/tokens` how many tokens were issued, `POST /_control/tokens/expire`
 * expires the live ones, `POST /_control/reset` forgets everything. Status reads obey no mode.
 */
export async function startBankSimulator(options: BankSimulatorOptions): Promise<RunningBankSimulator> {
  const state = createBankState(options);
  const server = await startSimulatorServer({
    port: options.port,
    timers: state.timers,
    before: [
      // Every refusal in the bank's envelope: unknown paths, unreadable JSON, oversized bodies.
      async (ctx, next) => {
        try {
          await next();
          if (ctx.status === 404 && ctx.body === undefined) fail(ctx, 404, ERROR_CODES.notFound, 'No such resource');
        } catch (error) {
          const status = (error as { status?: number }).status ?? 500;
          if (status === 413) fail(ctx, 413, ERROR_CODES.payloadTooLarge, 'Request body too large');
          else if (status === 400) fail(ctx, 400, ERROR_CODES.invalidJson, 'Request body is not valid JSON');
          else fail(ctx, 500, ERROR_CODES.internal, 'Internal server error');
        }
      },
    ],
    // Three images of up to 5 MiB, in base64.
    bodyParser: bodyParser({ enableTypes: ['json', 'form'], jsonLimit: '24mb', formLimit: '16kb' }),
    control: bankControl(state),
    api: bankApi(state),
  });
  return { url: server.url, customers: () => [...state.customers.values()], close: () => server.close() };
}

export type {
  BankSimulatorMode,
  BankSimulatorOptions,
  RunningBankSimulator,
  SimulatedCustomer,
  SimulatedImage,
  SimulatedMobileNumberChange,
} from './model';

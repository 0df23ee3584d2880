import { randomBytes, randomInt } from 'node:crypto';
import { callbackChaos, type CallbackChaos } from '../chaos';
import { SimulatorTimers } from '../server';
import { type CredentialKeys, credentialKeys } from './credential';
import {
  ALNUM,
  type Delivery,
  LIMITS,
  type MobileMoneySimulatorOptions,
  remember,
  type SentCallback,
  type SimulatedPayment,
  type SimulatedPush,
  type SimulatedStatusQuery,
  type SimulatorMode,
} from './model';

/** Everything the simulator remembers (in memory, bounded), shared by its API, control API and callbacks. */
export interface SimulatorState {
  options: MobileMoneySimulatorOptions;
  mode: SimulatorMode;
  /** Access tokens issued, with their expiry, in the order issued. */
  tokens: Map<string, number>;
  /** The certificate published for the B2C SecurityCredential, and its private key. */
  credentials: CredentialKeys;
  pushes: Map<string, SimulatedPush>;
  payments: Map<string, SimulatedPayment>;
  /** Every OriginatorConversationID accepted, kept longer than the payments themselves. */
  originatorIds: Map<string, true>;
  receipts: Map<string, true>;
  /** "Being processed" answers already given per push since processingQueries was set. */
  processingAnswered: Map<string, number>;
  /** Transaction Status queries received, oldest first (bounded). */
  statusQueries: SimulatedStatusQuery[];
  /** Status results lost since statusResultsLost was set. */
  statusResultsLostSoFar: number;
  sent: SentCallback[];
  /** 'reorder' mode: callbacks held, to be sent last-first. */
  held: Delivery[];
  timers: SimulatorTimers;
  /** Chaos mode's plans and records (configured from mode.chaos). */
  chaos: CallbackChaos;
  defaults(): SimulatorMode;
  /** A receipt number never issued before (`SIM` and seven letters or digits). */
  receipt(): string;
  /** A fresh access token, or undefined when too many live ones are out (spike arrest). */
  issueToken(): string | undefined;
}

export function createSimulatorState(options: MobileMoneySimulatorOptions): SimulatorState {
  const defaults = (): SimulatorMode => ({
    callbacks: 'normal',
    callbackDelayMs: options.callbackDelayMs ?? 50,
    lateCallbackMs: 2_000,
    reorderWindowMs: 250,
    processingQueries: 0,
    processingForMs: 0,
    failOAuth: false,
    pushFailWith: 0,
    payoutFailWith: 0,
    payoutAnswerDelayMs: 0,
    failedPushesTakeEffect: true,
    hangMs: 60_000,
    tokenTtlSeconds: 3599,
    statusResultsLost: 0,
    chaos: null,
  });
  const timers = new SimulatorTimers();
  const state: SimulatorState = {
    options,
    mode: defaults(),
    tokens: new Map(),
    credentials: credentialKeys(),
    pushes: new Map(),
    payments: new Map(),
    originatorIds: new Map(),
    receipts: new Map(),
    processingAnswered: new Map(),
    statusQueries: [],
    statusResultsLostSoFar: 0,
    sent: [],
    held: [],
    timers,
    chaos: callbackChaos(timers),
    defaults,
    receipt() {
      for (;;) {
        const candidate = `SIM${Array.from({ length: 7 }, () => ALNUM[randomInt(ALNUM.length)]).join('')}`;
        if (!state.receipts.has(candidate)) {
          remember(state.receipts, candidate, true, LIMITS.ids);
          return candidate;
        }
      }
    },
    issueToken() {
      const now = Date.now();
      // Memory is bounded by expiry, never by evicting a live token (that would break the client
      // holding it): every expired one goes, and a flood of live ones is refused (issueToken
      // answers undefined: the provider's spike arrest).
      if (state.tokens.size >= LIMITS.liveTokens) {
        for (const [issued, expiresAt] of state.tokens) if (expiresAt <= now) state.tokens.delete(issued);
        if (state.tokens.size >= LIMITS.liveTokens) return undefined;
      }
      const token = randomBytes(21).toString('base64url');
      state.tokens.set(token, now + state.mode.tokenTtlSeconds * 1000);
      return token;
    },
  };
  return state;
}

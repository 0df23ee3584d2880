import { SimulatorTimers } from '../server';
import {
  type BankSimulatorMode,
  type BankSimulatorOptions,
  DEFAULT_MODE,
  type SimulatedCustomer,
  type SimulatedMobileNumberChange,
  type Stored,
} from './model';

/** Everything the bank simulator remembers (in memory), shared by its API, decisions and control API. */
export interface BankState {
  options: BankSimulatorOptions;
  timers: SimulatorTimers;
  mode: BankSimulatorMode;
  /** Access tokens issued, with their expiry. */
  tokens: Map<string, number>;
  tokensIssued: number;
  /** By partnerReference. */
  customers: Map<string, SimulatedCustomer>;
  /** By customerId + partnerReference. */
  changes: Map<string, SimulatedMobileNumberChange>;
  /** Each submission's first answer, by operation + Idempotency-Key. */
  idempotency: Map<string, Stored>;
}

/** What a reset forgets: the default mode, no tokens, customers, changes or stored answers. */
const empty = () => ({
  mode: { ...DEFAULT_MODE },
  tokens: new Map<string, number>(),
  tokensIssued: 0,
  customers: new Map<string, SimulatedCustomer>(),
  changes: new Map<string, SimulatedMobileNumberChange>(),
  idempotency: new Map<string, Stored>(),
});

export function createBankState(options: BankSimulatorOptions): BankState {
  return { options, timers: new SimulatorTimers(), ...empty() };
}

/** Forgets everything: pending decisions are cancelled, the defaults are back. */
export function resetBankState(state: BankState): void {
  state.timers.clear();
  Object.assign(state, empty());
}

import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { ERROR_CODES, REFUSALS, type RefusalCode } from '../../providers/bank/protocol';
import {
  type ChangeSchema,
  changeResource,
  digits,
  now,
  type OnboardingSchema,
  onboardingResource,
  REASONS,
  type SimulatedCustomer,
  type SimulatedMobileNumberChange,
  summary,
} from './model';
import type { BankState } from './state';

/**
 * The bank's decisions on a valid submission: what it records and what it answers (the answer
 * is kept for replays of the Idempotency-Key). A live customer with the same document is
 * DUPLICATE_CUSTOMER, a number another live customer holds NUMBER_TAKEN, under 18 UNDERAGE;
 * else the mode decides, a pending decision after `decisionDelayMs`.
 */
export interface Answer {
  status: number;
  body: unknown;
}

const refusal = (code: string, message: string, status: number): Answer => ({ status, body: { code, message } });
const live = (c: SimulatedCustomer) => c.status !== 'REJECTED';
const byCustomerId = (state: BankState, id: string) => [...state.customers.values()].find((c) => c.customerId === id);
const numberHolder = (state: BankState, number: string, except?: string) =>
  [...state.customers.values()].find((c) => live(c) && c.customer.mobileNumber === number && c.customerId !== except);

export function onboard(state: BankState, body: z.output<typeof OnboardingSchema>): Answer {
  const { mode, customers } = state;
  if (customers.has(body.partnerReference))
    return refusal(ERROR_CODES.duplicateReference, 'partnerReference already used', 409);
  const { customer, documents } = body;
  const adult = new Date(customer.dateOfBirth);
  adult.setUTCFullYear(adult.getUTCFullYear() + 18);
  const duplicate = [...customers.values()].some(
    (c) => live(c) && c.customer.idType === customer.idType && c.customer.idNumber === customer.idNumber,
  );
  const decision = mode.onboarding === 'reject' ? 'reject' : mode.onboarding === 'pending' ? 'pending' : 'approve';
  const refused: RefusalCode | undefined = duplicate
    ? 'DUPLICATE_CUSTOMER'
    : numberHolder(state, customer.mobileNumber)
      ? 'NUMBER_TAKEN'
      : adult.getTime() > Date.now()
        ? 'UNDERAGE'
        : decision === 'reject'
          ? mode.onboardingRejection
          : undefined;
  const record: SimulatedCustomer = {
    onboardingId: `ONB${randomBytes(8).toString('hex').toUpperCase()}`,
    partnerReference: body.partnerReference,
    status: refused ? 'REJECTED' : decision === 'pending' ? 'PENDING' : 'ACTIVE',
    customerId: refused ? null : `CIF${digits(10)}`,
    accountNumber: refused || decision === 'pending' ? null : `01${digits(11)}`,
    rejection: refused ? { code: refused, reason: REASONS[refused] } : null,
    createdAt: now(),
    decidedAt: decision === 'pending' && !refused ? null : now(),
    customer,
    documents: Object.fromEntries(
      Object.entries(documents).flatMap(([kind, data]) => (data === undefined ? [] : [[kind, summary(data)]])),
    ),
  };
  customers.set(record.partnerReference, record);
  if (refused) return refusal(refused, REASONS[refused], REFUSALS[refused]);
  if (record.status === 'PENDING') {
    // Decided as the mode said when it was submitted, whatever the mode is by then.
    const outcome = mode.pendingDecision;
    const rejection = mode.onboardingRejection;
    state.timers.later(mode.decisionDelayMs, () => {
      record.decidedAt = now();
      if (outcome === 'approve') {
        record.status = 'ACTIVE';
        record.accountNumber = `01${digits(11)}`;
      } else {
        record.status = 'REJECTED';
        record.rejection = { code: rejection, reason: REASONS[rejection] };
      }
    });
  }
  return { status: record.status === 'ACTIVE' ? 201 : 202, body: onboardingResource(record) };
}

export function changeMobile(state: BankState, customerId: string, body: z.output<typeof ChangeSchema>): Answer {
  const { mode, changes } = state;
  const holder = byCustomerId(state, customerId);
  if (!holder) return refusal(ERROR_CODES.customerNotFound, 'No such customer', 404);
  const id = `${customerId}\n${body.partnerReference}`;
  if (changes.has(id)) return refusal(ERROR_CODES.duplicateReference, 'partnerReference already used', 409);
  if (holder.status !== 'ACTIVE') return refusal(ERROR_CODES.customerNotActive, 'The customer is not active', 422);
  if ([...changes.values()].some((c) => c.customerId === customerId && c.status === 'PENDING'))
    return refusal(ERROR_CODES.changeInProgress, 'A change is already under review', 409);
  const taken = numberHolder(state, body.newMobileNumber, customerId) !== undefined || mode.mobileChange === 'reject';
  const pending = !taken && mode.mobileChange === 'pending';
  const change: SimulatedMobileNumberChange = {
    changeId: `MCH${randomBytes(8).toString('hex').toUpperCase()}`,
    partnerReference: body.partnerReference,
    customerId,
    status: taken ? 'REJECTED' : pending ? 'PENDING' : 'COMPLETED',
    rejection: taken ? { code: 'NUMBER_TAKEN', reason: REASONS.NUMBER_TAKEN } : null,
    createdAt: now(),
    completedAt: taken || pending ? null : now(),
    newMobileNumber: body.newMobileNumber,
  };
  changes.set(id, change);
  if (taken) return refusal('NUMBER_TAKEN', REASONS.NUMBER_TAKEN, REFUSALS.NUMBER_TAKEN);
  const complete = (outcome: 'approve' | 'reject') => {
    // Checked again when it completes: the number may have been taken meanwhile.
    if (outcome === 'reject' || numberHolder(state, change.newMobileNumber, customerId)) {
      change.status = 'REJECTED';
      change.rejection = { code: 'NUMBER_TAKEN', reason: REASONS.NUMBER_TAKEN };
      return;
    }
    change.status = 'COMPLETED';
    change.completedAt = now();
    holder.customer = { ...holder.customer, mobileNumber: change.newMobileNumber };
  };
  const outcome = mode.pendingDecision;
  if (pending) state.timers.later(mode.decisionDelayMs, () => complete(outcome));
  else complete('approve');
  return { status: pending ? 202 : 201, body: changeResource(change) };
}

import { BankError, type MobileNumberChange, type Onboarding, REFUSALS } from '../../providers/bank/protocol';
import type { BankDecision } from '../../workflows/current-account/messages';

/**
 * The bank's answers that decide against the customer or the change. Anything else (our
 * credentials refused, NOT_FOUND, a reused key...) is not a decision: the step is retried, and a
 * failing step shows in the Temporal UI for an operator, until the run's bank deadline.
 */
const BANK_REFUSALS = new Set<string>([...Object.keys(REFUSALS), 'VALIDATION_ERROR']);
/** Answers that mean the bank may already hold our submission under this reference: its status read tells. */
const ASK_THE_STATUS = new Set<string>(['IDEMPOTENCY_KEY_REUSED', 'DUPLICATE_REFERENCE']);
export const notHeld = (error: unknown) => error instanceof BankError && error.details.code === 'NOT_FOUND';
/** Whether a submission's failure means the bank may hold it: then its status read tells. */
const askTheStatus = (error: unknown) =>
  error instanceof BankError && (error.details.indeterminate || ASK_THE_STATUS.has(error.details.code ?? ''));

/** Submits; when the bank may hold the submission, reads it instead. Holding nothing, the step is retried with the same key. */
export async function submitted<T>(submit: () => Promise<T>, status: () => Promise<T>): Promise<T> {
  try {
    return await submit();
  } catch (error) {
    if (!askTheStatus(error)) throw error;
    try {
      return await status();
    } catch (statusError) {
      throw notHeld(statusError) ? error : statusError;
    }
  }
}

/** A bank answer or error as a decision; transient and indeterminate errors are thrown (the step is retried). */
function decided<T extends Onboarding | MobileNumberChange>(read: (answer: T) => BankDecision) {
  return async (call: () => Promise<T>): Promise<BankDecision> => {
    try {
      return read(await call());
    } catch (error) {
      const definite = error instanceof BankError && !error.details.transient && !error.details.indeterminate;
      const code = definite ? error.details.code : undefined;
      if (code && BANK_REFUSALS.has(code)) return { status: 'REFUSED', code };
      throw error;
    }
  };
}
export const onboardingDecision = decided<Onboarding>((answer) =>
  answer.status === 'ACTIVE'
    ? { status: 'DONE', customerId: answer.bankCustomerId, accountNumber: answer.accountNumber }
    : { status: 'PENDING' },
);
export const changeDecision = decided<MobileNumberChange>((answer) =>
  answer.status === 'COMPLETED' ? { status: 'DONE' } : { status: 'PENDING' },
);

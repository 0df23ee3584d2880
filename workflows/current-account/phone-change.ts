import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import type { OtpPurpose } from '../../domain/current-account/codes';
import { authorizeOtpUpdate, confirmOtpUpdate, type PhoneChangeInput, selfServiceStateQuery } from './messages';
import { notAwaited, OtpChallenge } from './otp-challenge';
import { bankDecision, bankSteps, failureType, outcome, record, send } from './steps';

type Status =
  'INITIALIZING' | 'AWAITING_AUTHORIZATION' | 'AWAITING_CONFIRMATION' | 'PROCESSING' | 'COMPLETED' | 'REJECTED';

/**
 * A mobile-number change (`phone-change/<id>`), in two proofs and one bank step:
 * 1. the owner authorizes it with a code sent to the old mobile or the verified e-mail
 *    (authorizeOtp Update);
 * 2. the new number is proven with a code sent to it (confirmOtp Update);
 * 3. the bank changes the number; once it has, the user's phone changes in the same database
 *    transaction that records it (COMPLETED), unless another user took the number meanwhile.
 * The bank is asked only after both proofs, so nobody changes the bank's record without the
 * owner's authorization. Each code has its attempts and lifetime, and each step the change's
 * step deadline. Rejection reasons: OTP_ATTEMPTS_EXHAUSTED, EXPIRED, OTP_NOT_SENT,
 * NUMBER_TAKEN, BANK_<the bank's refusal code>, BANK_NO_DECISION, BANK_UNAVAILABLE.
 */
export async function phoneChange(input: PhoneChangeInput): Promise<{ status: Status; reason?: string }> {
  const ref = { organizationId: input.organizationId, changeId: input.changeId };
  const code = new OtpChallenge(input.otp);
  let status: Status = 'INITIALIZING';
  let rejection: string | undefined;

  const submitted = (awaiting: Status, next: 'AWAITING_CONFIRMATION' | 'PROCESSING') => ({
    handler: async ({ digest }: { digest: string }) => {
      const answer = await code.submit(digest);
      if (answer.outcome === 'ACCEPTED') {
        // Recorded before the answer (authorized_at, confirmed_at): the caller reads the new state.
        status = next;
        await outcome().recordPhoneChange({ ...ref, status: next });
      } else if (answer.outcome === 'LOCKED') {
        status = 'REJECTED';
        rejection = 'OTP_ATTEMPTS_EXHAUSTED';
        await outcome().recordPhoneChange({ ...ref, status: 'REJECTED', reason: rejection });
      }
      return answer;
    },
    validator: ({ digest }: { digest: string }) => {
      if (status !== awaiting) throw notAwaited('change', status);
      const refusal = code.refusal(digest, Date.now());
      if (refusal) throw refusal;
    },
  });
  setHandler(selfServiceStateQuery, () => ({ status, attempts: code.attempts, expiresAtMs: code.expiresAt }));
  const authorize = submitted('AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION');
  setHandler(authorizeOtpUpdate, authorize.handler, { validator: authorize.validator });
  const confirm = submitted('AWAITING_CONFIRMATION', 'PROCESSING');
  setHandler(confirmOtpUpdate, confirm.handler, { validator: confirm.validator });

  const reject = async (reason: string) => {
    status = 'REJECTED';
    rejection = reason;
    code.close();
    await outcome().recordPhoneChange({ ...ref, status: 'REJECTED', reason });
    return { status, reason };
  };

  /** Sends the step's code and waits for it: false when the change ended meanwhile (rejected). */
  async function proof(purpose: OtpPurpose, awaiting: 'AWAITING_AUTHORIZATION' | 'AWAITING_CONFIRMATION') {
    // Awaiting from the moment the code is on its way: it may reach the user before the step's result reaches the run.
    status = awaiting;
    try {
      await code.send(() => send.sendOtp({ organizationId: ref.organizationId, purpose, referenceId: ref.changeId }));
    } catch (error) {
      failureType(error);
      await reject('OTP_NOT_SENT');
      return false;
    }
    await record.recordPhoneChange({ ...ref, status: awaiting });
    // At the step's deadline nothing more is judged; a code already accepted still counts.
    if (!(await condition(() => status !== awaiting, input.stepTtlMs))) code.expire();
    await condition(allHandlersFinished);
    if (status === awaiting) await reject('EXPIRED');
    return (status as Status) !== 'REJECTED';
  }

  if (!(await proof('PHONE_CHANGE_AUTHORIZATION', 'AWAITING_AUTHORIZATION'))) return { status, reason: rejection };
  if (!(await proof('PHONE_CHANGE_CONFIRMATION', 'AWAITING_CONFIRMATION'))) return { status, reason: rejection };

  const bank = bankSteps(input.bank);
  const decision = await bankDecision(
    input.bank,
    () => bank.changeNumberAtBank(ref),
    () => bank.numberChangeStatus(ref),
  );
  if (decision.status === 'DONE') {
    const completed = await record.completePhoneChange(ref);
    if (completed === 'COMPLETED') return { status: (status = 'COMPLETED') };
    status = 'REJECTED';
    return { status, reason: completed };
  }
  if (decision.status === 'REFUSED')
    return reject(decision.code === 'NUMBER_TAKEN' ? 'NUMBER_TAKEN' : `BANK_${decision.code}`);
  return reject(`BANK_${decision.status === 'UNAVAILABLE' ? 'UNAVAILABLE' : 'NO_DECISION'}`);
}

import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import { type ActivationInput, confirmOtpUpdate, resendOtpUpdate, selfServiceStateQuery } from './messages';
import { notAwaited, OtpChallenge } from './otp-challenge';
import { bankDecision, bankSteps, failureType, outcome, record, send, sendRefusal } from './steps';

type Status = 'INITIALIZING' | 'AWAITING_OTP' | 'ONBOARDING' | 'COMPLETED' | 'REJECTED';

/**
 * A current-account activation, run as `account-activation/<id>`. A code is texted to the user's
 * mobile and confirmed through the confirmOtp Update. The Update's validator refuses a malformed
 * or expired code at once and leaves no trace; its handler counts a wrong code and rejects the
 * activation once the attempts are used up. The user may ask for the code again after a
 * cool-down. Then the bank opens the account with the user's KYC subject, the current account
 * becomes ACTIVE and the activation COMPLETED. Every ending is recorded on the activation's row,
 * which the API reads. The rejection reasons are OTP_ATTEMPTS_EXHAUSTED, EXPIRED, OTP_NOT_SENT,
 * BANK_<the bank's refusal code>, BANK_NO_DECISION and BANK_UNAVAILABLE.
 */
export async function accountActivation(input: ActivationInput): Promise<{ status: Status; reason?: string }> {
  const ref = { organizationId: input.organizationId, activationId: input.activationId };
  const code = new OtpChallenge(input.otp);
  let status: Status = 'INITIALIZING';
  let rejection: string | undefined;
  const sendCode = () =>
    send.sendOtp({ organizationId: ref.organizationId, purpose: 'ACTIVATION', referenceId: ref.activationId });

  setHandler(selfServiceStateQuery, () => ({ status, attempts: code.attempts, expiresAtMs: code.expiresAt }));
  setHandler(
    confirmOtpUpdate,
    async ({ digest }) => {
      const answer = await code.submit(digest);
      if (answer.outcome === 'ACCEPTED') {
        status = 'ONBOARDING';
        await outcome().recordActivation({ ...ref, status: 'ONBOARDING' });
      } else if (answer.outcome === 'LOCKED') {
        status = 'REJECTED';
        rejection = 'OTP_ATTEMPTS_EXHAUSTED';
        await outcome().recordActivation({ ...ref, status: 'REJECTED', reason: rejection });
      }
      return answer;
    },
    {
      validator: ({ digest }) => {
        if (status !== 'AWAITING_OTP') throw notAwaited('activation', status);
        const refusal = code.refusal(digest, Date.now());
        if (refusal) throw refusal;
      },
    },
  );
  setHandler(
    resendOtpUpdate,
    async () => {
      let sent: { sentAtMs: number };
      try {
        sent = await code.send(sendCode);
      } catch (error) {
        throw sendRefusal(error); // the previous code stays valid
      }
      await record.recordActivation({ ...ref, status: 'AWAITING_OTP' });
      return { sentAtMs: sent.sentAtMs };
    },
    {
      validator: () => {
        if (status !== 'AWAITING_OTP') throw notAwaited('activation', status);
        const refusal = code.resendRefusal(Date.now());
        if (refusal) throw refusal;
      },
    },
  );

  const reject = async (reason: string) => {
    status = 'REJECTED';
    rejection = reason;
    code.close();
    await outcome().recordActivation({ ...ref, status: 'REJECTED', reason });
    return { status, reason };
  };

  // Awaiting from the moment the code is on its way: it may reach the user before the step's result reaches the run.
  status = 'AWAITING_OTP';
  try {
    await code.send(sendCode);
  } catch (error) {
    failureType(error); // refused for good, or out of retries: either way no code went out
    return reject('OTP_NOT_SENT');
  }
  await record.recordActivation({ ...ref, status: 'AWAITING_OTP' });

  // The code confirmed (or the attempts used up) before the activation's deadline; each handler's
  // own write done before the run moves on, so the row never goes backwards.
  // At the deadline nothing more is judged; a submission already accepted still counts.
  if (!(await condition(() => status !== 'AWAITING_OTP', input.ttlMs))) code.expire();
  await condition(allHandlersFinished);
  if (status === 'AWAITING_OTP') return reject('EXPIRED');
  if ((status as Status) === 'REJECTED') return { status, reason: rejection };

  const bank = bankSteps(input.bank);
  const decision = await bankDecision(
    input.bank,
    () => bank.onboardAtBank(ref),
    // A pending decision is read under its own reference (an earlier activation's, when adopted).
    (pending) => bank.onboardingStatus({ ...ref, ...(pending.reference && { reference: pending.reference }) }),
  );
  if (decision.status === 'DONE' && decision.customerId) {
    await record.completeActivation({ ...ref, customerId: decision.customerId, accountNumber: decision.accountNumber });
    status = 'COMPLETED';
    return { status };
  }
  if (decision.status === 'REFUSED')
    return reject(decision.code === 'SUBJECT_NOT_PROVISIONED' ? decision.code : `BANK_${decision.code}`);
  return reject(`BANK_${decision.status === 'UNAVAILABLE' ? 'UNAVAILABLE' : 'NO_DECISION'}`);
}

import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import { confirmEmailUpdate, type EmailVerificationInput, selfServiceStateQuery } from './messages';
import { notAwaited, OtpChallenge } from './otp-challenge';
import { failureType, outcome, send } from './steps';

type Status = 'INITIALIZING' | 'SENT' | 'VERIFIED' | 'EXPIRED' | 'FAILED';

/**
 * An e-mail verification (`email-verification/<id>`): a link with a single-use token e-mailed to
 * the user's address (its SHA-256 kept, here and on the row), confirmed through the confirmEmail
 * Update with the token's digest before the link expires: VERIFIED, the user's e-mail verified.
 * EXPIRED when unused in time; FAILED when the e-mail could not be sent (EMAIL_NOT_SENT) or too
 * many wrong tokens came (TOO_MANY_ATTEMPTS).
 */
export async function emailVerification(input: EmailVerificationInput): Promise<{ status: Status }> {
  const ref = { organizationId: input.organizationId, verificationId: input.verificationId };
  // The link is a code of its own: one lifetime, single use, attempts counted; never resent.
  const link = new OtpChallenge({ ttlMs: input.ttlMs, maxAttempts: input.maxAttempts, resendCooldownMs: input.ttlMs });
  let status: Status = 'INITIALIZING';

  setHandler(selfServiceStateQuery, () => ({ status, attempts: link.attempts, expiresAtMs: link.expiresAt }));
  setHandler(
    confirmEmailUpdate,
    async ({ digest }) => {
      const answer = await link.submit(digest);
      if (answer.outcome === 'ACCEPTED') {
        status = 'VERIFIED';
        await outcome().markEmailVerified(ref);
      } else if (answer.outcome === 'LOCKED') {
        status = 'FAILED';
        await outcome().endEmailVerification({ ...ref, status: 'FAILED', reason: 'TOO_MANY_ATTEMPTS' });
      }
      return answer;
    },
    {
      validator: ({ digest }) => {
        if (status !== 'SENT') throw notAwaited('verification', status);
        const refusal = link.refusal(digest, Date.now());
        if (refusal) throw refusal;
      },
    },
  );

  status = 'SENT'; // from the moment the link is on its way (it may be used before the step's result arrives)
  try {
    await link.send(() => send.sendVerificationLink({ ...ref, ttlMs: input.ttlMs }));
  } catch (error) {
    failureType(error);
    status = 'FAILED';
    await outcome().endEmailVerification({ ...ref, status: 'FAILED', reason: 'EMAIL_NOT_SENT' });
    return { status };
  }
  // At the deadline nothing more is judged; a token already accepted still counts.
  if (!(await condition(() => status !== 'SENT', input.ttlMs))) link.expire();
  await condition(allHandlersFinished);
  if (status === 'SENT') {
    status = 'EXPIRED';
    link.close();
    await outcome().endEmailVerification({ ...ref, status: 'EXPIRED' });
  }
  return { status };
}

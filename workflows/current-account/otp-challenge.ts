import { ApplicationFailure } from '@temporalio/workflow';
import { type OtpAnswer, type OtpLimits, OtpRefusal } from './messages';

const DIGEST = /^[0-9a-f]{64}$/;

/** Constant-time comparison of two digests of the same length (no early exit on the first difference). */
function sameDigest(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i += 1) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

const refuse = (type: string, message: string, details?: unknown) =>
  ApplicationFailure.create({ type, message, nonRetryable: true, details: details ? [details] : undefined });

/**
 * One code a run waits for: its digest, lifetime, attempts and resend cool-down. Deterministic
 * (workflow time only); the run keeps it, so the code's state is in its history and survives
 * any worker. Used by the validators (refusal, resendRefusal: no state changes, a refused
 * submission leaves no trace) and the handlers (submit, issued).
 */
export class OtpChallenge {
  private digest: string | undefined;
  private sentAtMs = Number.NEGATIVE_INFINITY;
  private expiresAtMs = 0;
  private resending = false;
  attempts = 0;

  constructor(private readonly limits: OtpLimits) {}

  /** A code was sent: it replaces the previous one, with a fresh count of attempts. */
  issued(sent: { digest: string; sentAtMs: number }): void {
    this.digest = sent.digest;
    this.sentAtMs = sent.sentAtMs;
    this.expiresAtMs = sent.sentAtMs + this.limits.ttlMs;
    this.attempts = 0;
  }

  /** No code can be used any more (accepted, locked, or the run moved on). */
  close(): void {
    this.digest = undefined;
  }

  get expiresAt(): number | undefined {
    return this.digest === undefined ? undefined : this.expiresAtMs;
  }

  /** Why a submission is refused before it is looked at (an Update validator throws it). */
  refusal(digest: unknown, nowMs: number): ApplicationFailure | undefined {
    if (typeof digest !== 'string' || !DIGEST.test(digest)) return refuse(OtpRefusal.MALFORMED, 'Not a code digest');
    if (this.digest === undefined) return refuse(OtpRefusal.NOT_AWAITED, 'No code is awaited');
    if (nowMs >= this.expiresAtMs) return refuse(OtpRefusal.EXPIRED, 'The code has expired: ask for a new one');
    return undefined;
  }

  /** A submission the validator let through: accepted (single use), or a wrong one counted. */
  submit(digest: string): OtpAnswer {
    if (this.digest !== undefined && sameDigest(digest, this.digest)) {
      this.close();
      return { outcome: 'ACCEPTED' };
    }
    this.attempts += 1;
    const attemptsLeft = this.limits.maxAttempts - this.attempts;
    if (attemptsLeft > 0) return { outcome: 'WRONG_CODE', attemptsLeft };
    this.close();
    return { outcome: 'LOCKED' };
  }

  /** Why a resend is refused now: nothing awaited, one already on its way, or within the cool-down. */
  resendRefusal(nowMs: number): ApplicationFailure | undefined {
    if (this.digest === undefined && this.sentAtMs === Number.NEGATIVE_INFINITY)
      return refuse(OtpRefusal.NOT_AWAITED, 'No code has been sent yet');
    const retryAfterMs = Math.max(this.sentAtMs + this.limits.resendCooldownMs - nowMs, this.resending ? 1_000 : 0);
    if (retryAfterMs > 0) return refuse(OtpRefusal.COOLDOWN, 'A code was sent moments ago', { retryAfterMs });
    return undefined;
  }

  /** Marks a resend under way, so a second one in the same moment is refused. */
  resend<T>(send: () => Promise<T>): Promise<T> {
    this.resending = true;
    return send().finally(() => {
      this.resending = false;
    });
  }
}

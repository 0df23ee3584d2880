import { ApplicationFailure, condition, patched } from '@temporalio/workflow';
import { type OtpAnswer, type OtpLimits, OtpRefusal } from './messages';

const DIGEST = /^[0-9a-f]{64}$/;

/**
 * A submission the validator let through is judged against the code as it is when its handler
 * runs: one accepted (or locked) since refuses it, uncounted. Before, only a submission that had
 * waited for a code on its way was judged again, and one let through just before the right code
 * was accepted could count as wrong after it (and lock an accepted activation).
 */
const JUDGED_WHEN_HANDLED = 'otp-judged-when-handled';

/** Constant-time comparison of two digests of the same length (no early exit on the first difference). */
function sameDigest(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i += 1) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

const refuse = (type: string, message: string, details?: unknown) =>
  ApplicationFailure.create({ type, message, nonRetryable: true, details: details ? [details] : undefined });

/** The refusal of a submission or resend while the run is not at a step that awaits one. */
export const notAwaited = (what: string, status: string) => refuse(OtpRefusal.NOT_AWAITED, `The ${what} is ${status}`);

/**
 * One code a run waits for: its digest, lifetime, attempts and resend cool-down. Deterministic
 * (workflow time only); the run keeps it, so the code's state is in its history and survives
 * any worker. The validators ask `refusal` and `resendRefusal` (no state changes: a refused
 * submission leaves no trace); the handlers `submit`; the run sends codes through `send`.
 *
 * A code can reach the user before its sending step's result reaches the run: a submission
 * arriving while a code is being sent waits for it in the handler, then is judged against it.
 */
export class OtpChallenge {
  private digest: string | undefined;
  private sentAtMs = Number.NEGATIVE_INFINITY;
  private expiresAtMs = 0;
  private sending = 0;
  private waiting = 0;
  /** The run's own deadline passed: nothing more is judged (handlers already past their check finish). */
  private over = false;
  attempts = 0;

  constructor(
    private readonly limits: OtpLimits,
    /** Whether the run judges submissions when handled (its patch; a unit test answers for it). */
    private readonly judgedWhenHandled = () => patched(JUDGED_WHEN_HANDLED),
  ) {}

  /** Sends a code: it replaces the previous one, with a fresh count of attempts. */
  async send<T extends { digest: string; sentAtMs: number }>(sending: () => Promise<T>): Promise<T> {
    this.sending += 1;
    try {
      const sent = await sending();
      this.digest = sent.digest;
      this.sentAtMs = sent.sentAtMs;
      this.expiresAtMs = sent.sentAtMs + this.limits.ttlMs;
      this.attempts = 0;
      return sent;
    } finally {
      this.sending -= 1;
    }
  }

  /** The run's deadline passed: every later submission or resend is refused as expired. */
  expire(): void {
    this.over = true;
    this.digest = undefined;
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
    if (this.over) return refuse(OtpRefusal.EXPIRED, 'The code has expired');
    // Judged once the code being sent is known; a few wait at most (each holds an Update open).
    if (this.sending > 0)
      return this.waiting < this.limits.maxAttempts
        ? undefined
        : refuse(OtpRefusal.NOT_AWAITED, 'A code is on its way: try again in a moment');
    if (this.digest === undefined) return refuse(OtpRefusal.NOT_AWAITED, 'No code is awaited');
    if (nowMs >= this.expiresAtMs) return refuse(OtpRefusal.EXPIRED, 'The code has expired: ask for a new one');
    return undefined;
  }

  /**
   * A submission the validator let through: accepted (single use), or a wrong one counted. Once a
   * code is accepted or locked, later submissions are refused without counting.
   */
  async submit(digest: string): Promise<OtpAnswer> {
    const waited = this.sending > 0;
    if (waited) {
      this.waiting += 1;
      await condition(() => this.sending === 0).finally(() => (this.waiting -= 1));
    }
    if (waited || this.judgedWhenHandled()) {
      const refusal = this.refusal(digest, Date.now());
      if (refusal) throw refusal;
    }
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

  /** Why a resend is refused now: nothing sent yet, one on its way, or within the cool-down. */
  resendRefusal(nowMs: number): ApplicationFailure | undefined {
    if (this.over) return refuse(OtpRefusal.NOT_AWAITED, 'It has expired');
    if (this.sentAtMs === Number.NEGATIVE_INFINITY && this.sending === 0)
      return refuse(OtpRefusal.NOT_AWAITED, 'No code has been sent yet');
    const retryAfterMs = Math.max(this.sentAtMs + this.limits.resendCooldownMs - nowMs, this.sending > 0 ? 1_000 : 0);
    if (retryAfterMs > 0) return refuse(OtpRefusal.COOLDOWN, 'A code was sent moments ago', { retryAfterMs });
    return undefined;
  }
}

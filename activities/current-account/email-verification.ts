import { endEmailVerification, markEmailVerified } from '../../db/current-account/email-verification';
import type { Needs } from '../deps';

/** The e-mail verification run's records (its link is sent by sending.ts). */
export function createEmailVerificationActivities(deps: Needs<'db' | 'clock'>) {
  const { db, clock } = deps;
  return {
    async markEmailVerified(input: { organizationId: string; verificationId: string }) {
      await markEmailVerified(db, input.organizationId, input.verificationId, clock.now());
    },

    async endEmailVerification(input: {
      organizationId: string;
      verificationId: string;
      status: 'EXPIRED' | 'FAILED';
      reason?: string;
    }) {
      await endEmailVerification(db, input.organizationId, input.verificationId, {
        status: input.status,
        reason: input.reason,
        at: clock.now(),
      });
    },
  };
}

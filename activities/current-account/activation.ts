import { completeActivation, recordActivationStatus, uncertainOnboardings } from '../../db/current-account/activation';
import type { BankDecision } from '../../workflows/current-account/messages';
import type { Needs } from '../deps';
import { notHeld, onboardingDecision, submitted } from './bank';
import { onboardingRequest } from './onboarding';
import { needed, transition } from './steps';

/** The activation run's steps: its row, and the bank's onboarding of the customer. */
export function createActivationActivities(deps: Needs<'db' | 'providers' | 'clock'>) {
  const { db, providers, clock } = deps;
  const bank = () => needed(providers.bank, 'The bank');
  return {
    async recordActivation(input: {
      organizationId: string;
      activationId: string;
      status: 'AWAITING_OTP' | 'ONBOARDING' | 'REJECTED';
      reason?: string;
    }) {
      await recordActivationStatus(db, input.organizationId, input.activationId, transition(clock, input));
    },

    /**
     * Opens the account at the bank with the user's KYC subject, under our activation id as the
     * bank's reference. An earlier activation of the account whose bank outcome stayed unknown
     * (BANK_UNAVAILABLE, BANK_NO_DECISION) is asked about first, and adopted when the bank opened
     * or is opening it: one bank customer per account, whatever was retried or started again.
     */
    async onboardAtBank(input: { organizationId: string; activationId: string }): Promise<BankDecision> {
      for (const reference of await uncertainOnboardings(db, input.organizationId, input.activationId)) {
        const earlier = await onboardingDecision(() => bank().onboardingStatus(reference)).catch((error: unknown) => {
          if (notHeld(error)) return undefined;
          throw error;
        });
        if (earlier && earlier.status !== 'REFUSED') return { ...earlier, reference };
      }
      const request = await onboardingRequest(db, input.organizationId, input.activationId);
      if ('refused' in request) return { status: 'REFUSED', code: request.refused };
      return onboardingDecision(() =>
        submitted(
          () => bank().onboard(request),
          () => bank().onboardingStatus(input.activationId),
        ),
      );
    },

    async onboardingStatus(input: {
      organizationId: string;
      activationId: string;
      reference?: string;
    }): Promise<BankDecision> {
      const reference = input.reference ?? input.activationId;
      return {
        ...(await onboardingDecision(() => bank().onboardingStatus(reference))),
        ...(input.reference && { reference }),
      };
    },

    async completeActivation(input: {
      organizationId: string;
      activationId: string;
      customerId: string;
      accountNumber?: string;
    }) {
      await completeActivation(
        db,
        input.organizationId,
        input.activationId,
        { customerId: input.customerId, accountNumber: input.accountNumber ?? null },
        clock.now(),
      );
    },
  };
}

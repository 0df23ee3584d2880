import { z } from 'zod';
import { BANK_ID_TYPES, type BankClient, type BankOperation, type Onboarding, type OnboardingBody } from './protocol';
import { type Answer, type BankTransport, failure, nonEmpty, ok, rejected, rejection, unreadable } from './transport';

/**
 * Onboarding: opening a customer's current account under our reference, and reading where it
 * stands. ./client.ts composes it with the mobile-number changes over ./transport.ts.
 */

const onboardingAnswer = z.object({
  partnerReference: z.string(),
  status: z.enum(['PENDING', 'ACTIVE', 'REJECTED']),
  customerId: z.string().min(1).nullable(),
  accountNumber: z.string().min(1).nullable().optional(),
  rejection,
});

/** A resource answer as ours; REJECTED is the definite refusal it is. */
function onboardingOf(operation: BankOperation, write: boolean, answer: Answer, reference: string): Onboarding {
  const parsed = onboardingAnswer.safeParse(answer.body);
  if (!parsed.success || parsed.data.partnerReference !== reference) throw unreadable(operation, write, answer);
  const { status, customerId, accountNumber } = parsed.data;
  if (status === 'REJECTED') throw rejected(operation, parsed.data.rejection?.code);
  if (!customerId || (status === 'ACTIVE' && !accountNumber)) throw unreadable(operation, write, answer);
  return { status, bankCustomerId: customerId, ...(status === 'ACTIVE' && { accountNumber: accountNumber! }) };
}

export function createOnboarding({ authorized }: BankTransport): Pick<BankClient, 'onboard' | 'onboardingStatus'> {
  return {
    async onboard({ reference, customer, documents }) {
      nonEmpty(reference, 'reference');
      const idType = Object.hasOwn(BANK_ID_TYPES, customer.idType) ? BANK_ID_TYPES[customer.idType] : undefined;
      if (!idType) throw new RangeError('idType must be IDENTITY_CARD, ALIEN_CARD or PASSPORT for a bank account');
      const payload: OnboardingBody = {
        partnerReference: reference,
        customer: {
          firstName: customer.firstName,
          ...(customer.middleName && { middleName: customer.middleName }),
          lastName: customer.lastName,
          dateOfBirth: customer.dateOfBirth,
          idType,
          idNumber: customer.idNumber,
          mobileNumber: customer.mobileNumber,
          ...(customer.email && { email: customer.email }),
        },
        documents: {
          frontSidePhoto: documents.idFront,
          ...(documents.idBack && { backSidePhoto: documents.idBack }),
          selfiePhoto: documents.selfie,
        },
      };
      const answer = await authorized('onboard', '/v1/onboardings', {
        method: 'POST',
        idempotencyKey: reference,
        payload,
      });
      if (!ok(answer)) throw failure('onboard', true, answer);
      return onboardingOf('onboard', true, answer, reference);
    },

    async onboardingStatus(reference) {
      const answer = await authorized(
        'onboardingStatus',
        `/v1/onboardings/by-reference/${nonEmpty(reference, 'reference')}`,
        { method: 'GET' },
      );
      if (!ok(answer)) throw failure('onboardingStatus', false, answer);
      return onboardingOf('onboardingStatus', false, answer, reference);
    },
  };
}

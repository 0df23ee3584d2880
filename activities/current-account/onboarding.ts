import type { Knex } from 'knex';
import { findActivationRecipient } from '../../db/current-account/activation';
import { firstImages } from '../../db/kyc/documents';
import { findProvisionedSubject } from '../../db/kyc/provisioned';
import { requiredImages } from '../../domain/kyc/provisioned';
import type { OnboardingRequest } from '../../providers/bank/protocol';

/**
 * The bank onboarding of a provisioned KYC subject (domain/kyc/provisioned.ts, the definition the
 * activation's start and the subject-details lookup share): its customer fields and the first
 * image of each document side and the selfie; or what is missing.
 */
async function provisionedOnboarding(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<Pick<OnboardingRequest, 'customer' | 'documents'> | { missing: string }> {
  const subject = await findProvisionedSubject(db, organizationId, userId);
  if ('missing' in subject) return subject;
  const needed = requiredImages(subject.idType);
  const images = await firstImages(db, organizationId, subject.application.id, needed, true);
  if (needed.some((kind) => !images.get(kind))) return { missing: 'document images' };
  const base64 = (kind: (typeof needed)[number]) => images.get(kind)!.toString('base64');
  const [firstName, ...rest] = subject.names;
  const lastName = rest.pop()!;
  const email = subject.subject.email ?? subject.user.email;
  return {
    customer: {
      firstName: firstName!,
      ...(rest.length > 0 && { middleName: rest.join(' ') }),
      lastName,
      dateOfBirth: subject.dateOfBirth,
      idType: subject.idType,
      idNumber: subject.idNumber,
      // The number the activation code went to: the one the customer just proved.
      mobileNumber: subject.mobileNumber,
      ...(email && { email }),
    },
    documents: {
      idFront: base64('DOCUMENT_FRONT'),
      ...(subject.idType !== 'PASSPORT' && { idBack: base64('DOCUMENT_BACK') }),
      selfie: base64('SELFIE'),
    },
  };
}

/** The bank onboarding of an activation's user; a subject no longer provisioned is a refusal (SUBJECT_NOT_PROVISIONED). */
export async function onboardingRequest(
  db: Knex,
  organizationId: string,
  activationId: string,
): Promise<OnboardingRequest | { refused: string }> {
  const activation = await findActivationRecipient(db, organizationId, activationId);
  if (!activation) return { refused: 'SUBJECT_NOT_PROVISIONED' };
  const onboarding = await provisionedOnboarding(db, organizationId, activation.user_id);
  if ('missing' in onboarding) return { refused: 'SUBJECT_NOT_PROVISIONED' };
  return { reference: activationId, ...onboarding };
}

import type { Knex } from 'knex';
import { findActivationRecipient } from '../../db/current-account/activations';
import { findLatestApplication } from '../../db/kyc/applications';
import { firstImages } from '../../db/kyc/documents';
import { findSubject, findUser } from '../../db/kyc/subjects';
import { KycStatus } from '../../domain/kyc/status';
import { BANK_ID_TYPES, type CustomerIdType, type OnboardingRequest } from '../../providers/bank/protocol';

/**
 * A provisioned KYC subject (spec 4.2's subject details, as the bank onboarding needs them): the
 * user's latest KYC application APPROVED, and a subject with a name of at least two words, a date
 * of birth, an identity document the bank takes (IDENTITY_CARD, ALIEN_CARD, PASSPORT) with its
 * number, and the document's front image and a selfie (and its back for an ID card or alien card).
 * Answers the request (its images read only with `images`: a check needs none), or what is missing.
 */
export async function provisionedSubject(
  db: Knex,
  organizationId: string,
  userId: string,
  options: { images: boolean },
): Promise<
  { customer: OnboardingRequest['customer']; documents?: OnboardingRequest['documents'] } | { missing: string }
> {
  const [user, subject, application] = await Promise.all([
    findUser(db, organizationId, userId),
    findSubject(db, organizationId, userId),
    findLatestApplication(db, organizationId, userId),
  ]);
  if (!user || !subject) return { missing: 'KYC subject' };
  if (application?.status !== KycStatus.APPROVED) return { missing: 'approved KYC verification' };
  const names = (subject.name ?? user.name ?? '').trim().split(/\s+/).filter(Boolean);
  if (names.length < 2) return { missing: 'full name' };
  if (!subject.date_of_birth) return { missing: 'date of birth' };
  const idType = subject.identity_type as CustomerIdType;
  if (!(idType in BANK_ID_TYPES) || !subject.id_number) return { missing: 'identity document the bank accepts' };
  // The number the activation code went to: the one the customer just proved.
  const phone = user.phone_number;
  if (!phone) return { missing: 'mobile number' };
  const needed =
    idType === 'PASSPORT'
      ? (['DOCUMENT_FRONT', 'SELFIE'] as const)
      : (['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE'] as const);
  const images = await firstImages(db, organizationId, application.id, [...needed], options.images);
  if (needed.some((kind) => !images.has(kind))) return { missing: 'document images' };
  const base64 = (kind: (typeof needed)[number]) => images.get(kind)!.toString('base64');
  const [firstName, ...rest] = names;
  const lastName = rest.pop()!;
  return {
    customer: {
      firstName: firstName!,
      ...(rest.length > 0 && { middleName: rest.join(' ') }),
      lastName,
      dateOfBirth: calendarDay(subject.date_of_birth),
      idType,
      idNumber: subject.id_number,
      mobileNumber: phone,
      ...((subject.email ?? user.email) && { email: subject.email ?? user.email }),
    },
    ...(options.images && {
      documents: {
        idFront: base64('DOCUMENT_FRONT'),
        ...(idType !== 'PASSPORT' && { idBack: base64('DOCUMENT_BACK') }),
        selfie: base64('SELFIE'),
      },
    }),
  };
}

/** A Postgres date as YYYY-MM-DD: node-postgres reads one as local midnight, so local fields, not UTC ones. */
function calendarDay(value: Date | string): string {
  if (typeof value === 'string') return value.slice(0, 10);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${value.getFullYear()}-${pad(value.getMonth() + 1)}-${pad(value.getDate())}`;
}

/** The bank onboarding of an activation's user; a subject no longer provisioned is a refusal (SUBJECT_NOT_PROVISIONED). */
export async function onboardingRequest(
  db: Knex,
  organizationId: string,
  activationId: string,
): Promise<OnboardingRequest | { refused: string }> {
  const activation = await findActivationRecipient(db, organizationId, activationId);
  if (!activation) return { refused: 'SUBJECT_NOT_PROVISIONED' };
  const subject = await provisionedSubject(db, organizationId, activation.user_id, { images: true });
  if ('missing' in subject || !subject.documents) return { refused: 'SUBJECT_NOT_PROVISIONED' };
  return { reference: activationId, customer: subject.customer, documents: subject.documents };
}

import { KycStatus } from './status';

/**
 * What makes a KYC subject *provisioned*: the one definition the internal subject-details lookup
 * (spec 4.2, "404 when the user has no provisioned subject yet") and current-account activation
 * (its start, and the bank onboarding it ends with) share, read through `findProvisionedSubject`
 * (db/kyc/provisioned.ts). It is what a bank onboarding needs:
 *
 * - the user's latest KYC application is APPROVED (a pending, rejected or expired one is not
 *   enough, whatever identity was submitted with it);
 * - a name (the subject's, else the user's) of at least two words;
 * - a date of birth;
 * - an identity document the partner bank onboards with (ID card, alien card, passport) and its number;
 * - the user's mobile number;
 * - the latest application's images of the document's front, its back (not for a passport) and a selfie.
 */
export const PROVISIONED_ID_TYPES = ['IDENTITY_CARD', 'ALIEN_CARD', 'PASSPORT'] as const;
export type ProvisionedIdType = (typeof PROVISIONED_ID_TYPES)[number];
export type ProvisionedImageKind = 'DOCUMENT_FRONT' | 'DOCUMENT_BACK' | 'SELFIE';
export const PROVISIONED_IMAGE_KINDS: readonly ProvisionedImageKind[] = ['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE'];

/** The images a provisioned subject holds for its document: a passport has no back. */
export function requiredImages(idType: ProvisionedIdType): ProvisionedImageKind[] {
  return idType === 'PASSPORT' ? ['DOCUMENT_FRONT', 'SELFIE'] : ['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE'];
}

interface UserFacts {
  name: string | null;
  phone_number: string | null;
}
interface SubjectFacts {
  name: string | null;
  date_of_birth: string | null;
  identity_type: string | null;
  id_number: string | null;
}
interface ApplicationFacts {
  status: string;
}

/** What is known of a user's identity in one organization. */
export interface IdentityFacts<U extends UserFacts, S extends SubjectFacts, A extends ApplicationFacts> {
  user: U | undefined;
  subject: S | undefined;
  /** The user's latest KYC application, of any status. */
  application: A | undefined;
  /** The kinds of image stored for that application. */
  imageKinds: ReadonlySet<string>;
}

/** A provisioned subject: the facts, and the complete identity read from them. */
export interface Provisioned<U, S, A> {
  user: U;
  subject: S;
  application: A;
  /** The name's words, at least two. */
  names: string[];
  /** YYYY-MM-DD. */
  dateOfBirth: string;
  idType: ProvisionedIdType;
  idNumber: string;
  mobileNumber: string;
}

/** The subject when it is provisioned, or what it misses first (for logs and error descriptions). */
export function provisioning<U extends UserFacts, S extends SubjectFacts, A extends ApplicationFacts>(
  facts: IdentityFacts<U, S, A>,
): Provisioned<U, S, A> | { missing: string } {
  const { user, subject, application } = facts;
  if (!user || !subject) return { missing: 'KYC subject' };
  if (application?.status !== KycStatus.APPROVED) return { missing: 'approved KYC verification' };
  const names = (subject.name ?? user.name ?? '').trim().split(/\s+/).filter(Boolean);
  if (names.length < 2) return { missing: 'full name' };
  if (!subject.date_of_birth) return { missing: 'date of birth' };
  const idType = PROVISIONED_ID_TYPES.find((type) => type === subject.identity_type);
  if (!idType || !subject.id_number) return { missing: 'identity document the bank accepts' };
  if (!user.phone_number) return { missing: 'mobile number' };
  if (requiredImages(idType).some((kind) => !facts.imageKinds.has(kind))) return { missing: 'document images' };
  return {
    user,
    subject,
    application,
    names,
    dateOfBirth: subject.date_of_birth,
    idType,
    idNumber: subject.id_number,
    mobileNumber: user.phone_number,
  };
}

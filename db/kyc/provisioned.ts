import type { Knex } from 'knex';
import { PROVISIONED_IMAGE_KINDS, type Provisioned, provisioning } from '../../domain/kyc/provisioned';
import { findLatestApplication, type KycApplicationRow } from './applications';
import { firstImages } from './documents';
import { findSubject, findUser, type KycSubjectRow, type KycUserRow } from './subjects';

export type ProvisionedSubject = Provisioned<KycUserRow, KycSubjectRow, KycApplicationRow>;

/**
 * The user's provisioned KYC subject in the organization, or what it misses: the definition is
 * domain/kyc/provisioned.ts; these are the reads it decides from (no image content is read).
 * Used by the subject-details lookup and by current-account activation alike.
 */
export async function findProvisionedSubject(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<ProvisionedSubject | { missing: string }> {
  const [user, subject, application] = await Promise.all([
    findUser(db, organizationId, userId),
    findSubject(db, organizationId, userId),
    findLatestApplication(db, organizationId, userId),
  ]);
  const images =
    application && subject
      ? await firstImages(db, organizationId, application.id, [...PROVISIONED_IMAGE_KINDS], false)
      : new Map<string, unknown>();
  return provisioning({ user, subject, application, imageKinds: new Set(images.keys()) });
}

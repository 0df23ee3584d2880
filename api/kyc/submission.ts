import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../../config';
import { findSubject, findUser } from '../../db/kyc/subjects';
import { ErrorCode, type InvalidParam, ServiceError, SubCode } from '../../domain/errors';
import {
  negotiateProviderApiVersion,
  type ProviderApiVersion,
  versionsDifference,
} from '../../domain/kyc/provider-version';
import { verificationRules } from '../../domain/kyc/requirements';
import { isSupportedDocument } from '../../providers/kyc/supported-documents';
import type { KycApplicationRow } from '../../db/kyc/applications';
import type { UserCaller } from '../auth/caller';
import { type DecodedImage, decodeImage, isInvalid, KycSubCode } from './images';

/**
 * What a verification submission must be before anything is stored or started: the version it
 * runs on, a server upload's images and document, the applicant's name on v3.
 */

const image = z.string().min(1).meta({ description: 'Base64 JPEG or PNG (a data: URL prefix is accepted).' });

export const ServerUpload = z.strictObject({
  channel: z.literal('server_upload'),
  id_type: z.string().min(1).max(64).meta({ example: 'IDENTITY_CARD' }),
  country: z
    .string()
    .length(2)
    .default('KE')
    .meta({ description: 'Two-letter country of the document; KE when omitted.' }),
  id_number: z.string().min(1).max(64).optional(),
  name: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .meta({
      description:
        "Extension: the applicant's full name as on the document, for a job on v3, which sends the given and last " +
        'names to the provider with the document: without one on file (missing_applicant_fields names it) it must ' +
        'come here. A job on v2 uses the name on file and does not store this one.',
      example: 'Amina Wanjiru Otieno',
    }),
  date_of_birth: z.iso
    .date()
    .refine((day) => day >= '1900-01-01' && Date.parse(day) <= Date.now(), 'a past date, 1900 or later')
    .optional()
    .meta({
      description:
        "Extension: the applicant's date of birth as on the document (YYYY-MM-DD). With id_number, what the bank " +
        'onboarding of a current-account activation needs once the verification is APPROVED.',
      example: '1990-04-12',
    }),
  selfie: image,
  document_front: image,
  document_back: image.optional(),
  liveness_images: z.array(image).max(50).optional(),
  consent: z.boolean().optional(),
});

/**
 * The version a submission runs on (spec 4.2): the header's values must be the ones GET
 * verification was last sent, as a set; without a GET before it, the POST negotiates on its own.
 */
export function pinVersion(application: KycApplicationRow, header: string | undefined): ProviderApiVersion {
  const difference = versionsDifference(application, header);
  if (difference)
    throw new ServiceError(
      ErrorCode.INVALID_PARAMS,
      'X-Provider-Api-Versions differs from the values sent to GET verification',
      [{ path: 'header.x-provider-api-versions', reason: difference, sub_code: KycSubCode.VERSION_MISMATCH }],
    );
  return negotiateProviderApiVersion(header);
}

/** The submission rules of the configured limits. */
export function submissionChecks(
  config: Pick<
    Config,
    'KYC_LIVENESS_MIN_IMAGES' | 'KYC_LIVENESS_MAX_IMAGES' | 'KYC_CONSENT_REQUIRED' | 'KYC_MAX_IMAGE_BYTES'
  >,
) {
  const rulesFor = (version: ProviderApiVersion) =>
    verificationRules(version, {
      minLiveness: config.KYC_LIVENESS_MIN_IMAGES,
      maxLiveness: config.KYC_LIVENESS_MAX_IMAGES,
      consentRequired: config.KYC_CONSENT_REQUIRED,
    });

  /**
   * The submission checked against the rules of `version`, the one negotiated; `passiveOn`: a lone
   * selfie the capture alias takes for the passive check (spec 4.2), its job run on that version,
   * is held to every rule of `version` (consent, face image types) but its frames, and its document
   * must be one both versions take.
   */
  function validateServerUpload(
    body: z.infer<typeof ServerUpload>,
    version: ProviderApiVersion,
    passiveOn?: ProviderApiVersion,
  ) {
    const rules = rulesFor(version);
    const problems: InvalidParam[] = [];
    const images: { kind: string; position: number; image: DecodedImage }[] = [];
    const take = (kind: string, position: number, text: string, path: string, face = false) => {
      const decoded = decodeImage(text, path, config.KYC_MAX_IMAGE_BYTES);
      if (isInvalid(decoded)) problems.push(decoded);
      else if (face && !rules.faceImageTypes.includes(decoded.contentType))
        problems.push({
          path,
          reason: `must be ${rules.faceImageTypes.join(' or ')} on ${version}`,
          sub_code: KycSubCode.UNSUPPORTED_IMAGE_TYPE,
        });
      else images.push({ kind, position, image: decoded });
    };
    take('SELFIE', 0, body.selfie, 'body.selfie', true);
    take('DOCUMENT_FRONT', 0, body.document_front, 'body.document_front');
    if (body.document_back) take('DOCUMENT_BACK', 0, body.document_back, 'body.document_back');
    (body.liveness_images ?? []).forEach((frame, i) => take('LIVENESS', i, frame, `body.liveness_images.${i}`, true));
    const unsupportedOn = [version, ...(passiveOn ? [passiveOn] : [])].find(
      (on) => !isSupportedDocument(on, body.country, body.id_type),
    );
    if (unsupportedOn) {
      problems.push({
        path: 'body.id_type',
        reason: `${body.id_type} is not supported for ${body.country} on ${unsupportedOn}`,
        sub_code: KycSubCode.UNSUPPORTED_DOCUMENT,
      });
    }
    if (rules.requiresConsent && body.consent !== true) {
      problems.push({
        path: 'body.consent',
        reason: 'the applicant must consent',
        sub_code: KycSubCode.CONSENT_REQUIRED,
      });
    }
    const frames = body.liveness_images?.length ?? 0;
    const framesAsked = frames > 0 || (rules.requiresLiveness && !passiveOn);
    if (framesAsked && (frames < rules.minLiveness || frames > rules.maxLiveness)) {
      problems.push({
        path: 'body.liveness_images',
        reason: `between ${rules.minLiveness} and ${rules.maxLiveness} frames`,
        sub_code: SubCode.OUT_OF_RANGE,
      });
    }
    if (problems.length > 0) throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', problems);
    return images;
  }

  return { rulesFor, validateServerUpload };
}

/**
 * v3 sends the applicant's given and last names: a submission with no name, neither in its body
 * nor on file, is refused here (body.name), not by the provider later.
 */
export async function requireApplicantName(db: Knex, caller: UserCaller, given: string | undefined): Promise<void> {
  if (given) return;
  const [subject, user] = await Promise.all([
    findSubject(db, caller.organizationId, caller.userId),
    findUser(db, caller.organizationId, caller.userId),
  ]);
  if (!(subject?.name ?? user?.name)?.trim())
    throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
      {
        path: 'body.name',
        reason:
          "the provider needs the applicant's name: send it, or have it on file (missing_applicant_fields lists it)",
        sub_code: SubCode.REQUIRED,
      },
    ]);
}

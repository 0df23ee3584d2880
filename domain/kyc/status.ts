/**
 * KYC application statuses. The spec names DRAFT, ID_VERIFICATION_PENDING and EXPIRED; the
 * completed outcomes are ours: APPROVED (the provider verified the document and the face) and
 * REJECTED (no match, not found, spoof, or a provider error on the submission).
 */
export const KycStatus = {
  DRAFT: 'DRAFT',
  ID_VERIFICATION_PENDING: 'ID_VERIFICATION_PENDING',
  APPROVED: 'APPROVED',
  REJECTED: 'REJECTED',
  EXPIRED: 'EXPIRED',
} as const;
export type KycStatus = (typeof KycStatus)[keyof typeof KycStatus];

export interface ApplicationState {
  id: string;
  status: KycStatus;
  needs_review: boolean;
  resubmission_count: number;
  reapply_blocked_until: Date | null;
}

/** The lightweight status resource (spec 2): whether the applicant may submit, and what to tell them. */
export function statusView(application: ApplicationState, now: Date, maxResubmissions: number) {
  const blocked = application.reapply_blocked_until !== null && application.reapply_blocked_until > now;
  const canSubmit =
    application.status === KycStatus.DRAFT ||
    ((application.status === KycStatus.REJECTED || application.status === KycStatus.EXPIRED) &&
      !blocked &&
      application.resubmission_count < maxResubmissions);
  const message = {
    DRAFT: 'Submit your ID document and a selfie to verify your identity.',
    ID_VERIFICATION_PENDING: application.needs_review
      ? 'Your documents are being reviewed by a person; this can take a while.'
      : 'We are verifying your identity.',
    APPROVED: 'Your identity is verified.',
    REJECTED: canSubmit
      ? 'We could not verify your identity. Please submit again with clear photos.'
      : 'We could not verify your identity.',
    EXPIRED: canSubmit ? 'Your verification expired. Please submit again.' : 'Your verification expired.',
  }[application.status];
  return {
    id: application.id,
    status: application.status,
    can_submit: canSubmit,
    needs_review: application.needs_review,
    message,
  };
}

/**
 * The failure types of the service's workflows and activities (ApplicationFailure.type), one
 * enumeration shared by workflows, activities and the API, so every layer spells them alike.
 * Pure: safe to import from workflows.
 */
export const Failure = {
  /** The resource an activity was started for does not exist (never retried). */
  NOT_FOUND: 'NOT_FOUND',
  /** The resource is in a state the step cannot apply to (never retried). */
  INVALID_STATE: 'INVALID_STATE',
  /** A v3 KYC submission may have reached the provider, which cannot be asked by our job id. */
  SUBMISSION_INDETERMINATE: 'SUBMISSION_INDETERMINATE',
  /** The provider refused the request itself; sending it again cannot help. */
  PROVIDER_REJECTED_REQUEST: 'PROVIDER_REJECTED_REQUEST',
  /** Update refusals of the kyc-verification run (reporting the provider's job id). */
  DIFFERENT_JOB_ID: 'DIFFERENT_JOB_ID',
  NOT_PENDING: 'NOT_PENDING',
} as const;
export type Failure = (typeof Failure)[keyof typeof Failure];

/**
 * Workflow ids are business keys: a retried start finds the run already there instead of
 * starting a second one. One place builds them, for the API, the worker and operators.
 */
export const workflowIds = {
  /** One verification run per application at a time; a resubmission starts the next run. */
  kycVerification: (applicationId: string) => `kyc-verification/${applicationId}`,
};

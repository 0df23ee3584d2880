/**
 * Workflow ids are business keys: a retried start finds the run already there instead of
 * starting a second one. One place builds them, for the API, the worker and operators.
 */
export const workflowIds = {
  /** One verification run per application at a time; a resubmission starts the next run. */
  kycVerification: (applicationId: string) => `kyc-verification/${applicationId}`,
  /** One sweep per organization at a time: manual and scheduled runs share it, never block each other. */
  kycExpirySweep: (organizationId: string) => `kyc-expiry-sweep/${organizationId}`,
  /** One run per transaction, for its whole life: a retried start can never push twice. */
  stkPush: (transactionId: string) => `stk-push/${transactionId}`,
  sendMoney: (transactionId: string) => `send-money/${transactionId}`,
  /** An offer's life: one run per loan application, until it is taken or expires. */
  loanApplication: (applicationId: string) => `loan-application/${applicationId}`,
  /** A loan's life, from disbursement to closing. */
  loan: (loanId: string) => `loan/${loanId}`,
  /** Current-account self-service: one run per activation, verification and change, owning its codes. */
  accountActivation: (activationId: string) => `account-activation/${activationId}`,
  emailVerification: (verificationId: string) => `email-verification/${verificationId}`,
  phoneChange: (changeId: string) => `phone-change/${changeId}`,
  /** A document's invoice extractions, one at a time: a re-extraction signals the run or starts the next. */
  invoiceExtraction: (documentId: string) => `invoice-extraction/${documentId}`,
  /** One event to one endpoint; a resend starts it again under the same id once the last run closed. */
  webhookDelivery: (eventId: string, endpointId: string) => `webhook-delivery/${eventId}/${endpointId}`,
};

/** Schedule ids: the schedule's own runs get a timestamp suffix, so they are never business keys. */
export const scheduleIds = {
  kycExpirySweep: 'kyc-expiry-sweep',
  callbackRetention: 'callback-retention',
  idempotencyKeyPurge: 'idempotency-key-purge',
  repaymentReconciliation: 'repayment-reconciliation',
  webhookDispatch: 'webhook-dispatch',
  webhookEventRetention: 'webhook-event-retention',
};

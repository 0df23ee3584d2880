/**
 * The workflow bundle's entry point: every workflow of the service is re-exported here, and the
 * exported function's name is its workflow type.
 */
export { callbackRetention } from './platform/callback-retention';
export { idempotencyKeyPurge } from './platform/idempotency-purge';
export { kycExpirySweep, kycExpirySweepAll } from './kyc/expiry-sweep';
export { kycVerification } from './kyc/verification';
export { sendMoney } from './mobile-money/send-money';
export { stkPush } from './mobile-money/stk-push';
export { loan } from './loans/loan';
export { loanApplication } from './loans/loan-application';
export { repaymentReconciliation } from './loans/repayment-reconciliation';
export { accountActivation } from './current-account/activation';
export { emailVerification } from './current-account/email-verification';
export { phoneChange } from './current-account/phone-change';
export { invoiceExtraction } from './financing/invoice-extraction';
export { webhookDelivery } from './webhooks/delivery';
export { webhookDispatch } from './webhooks/dispatch';
export { webhookEventRetention } from './webhooks/event-retention';

/**
 * The workflow bundle's entry point: every workflow of the service is re-exported here, and the
 * exported function's name is its workflow type. Areas add theirs as they land
 * (kyc-verification, stk-push, send-money, loan-application, ...).
 */
export {};

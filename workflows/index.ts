/**
 * The workflow bundle's entry point: every workflow of the service is re-exported here, and the
 * exported function's name is its workflow type.
 */
export { kycVerification } from './kyc-verification';

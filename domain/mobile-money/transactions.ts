/**
 * Mobile-money transactions as the API shows them (spec 2, Transaction). Money is integer minor
 * units: Money.value 150000 with currency KES is KES 1,500.00. The provider moves whole
 * shillings, so amounts are positive multiples of 100 up to the provider's per-transaction cap.
 *
 * Statuses and the timestamps each sets:
 *   PENDING    transacted_at (the request was accepted by this service)
 *   CONFIRMED  confirmed_at (the provider reported the money moved; its receipt is recorded)
 *   POSTED     posted_at (the ledger carries it; final)
 *   FAILED     failed_at and failure_reason (final; nothing stays held)
 */
export const TransactionStatus = {
  PENDING: 'PENDING',
  CONFIRMED: 'CONFIRMED',
  POSTED: 'POSTED',
  FAILED: 'FAILED',
} as const;
export type TransactionStatus = (typeof TransactionStatus)[keyof typeof TransactionStatus];
export const FINAL_STATUSES: readonly TransactionStatus[] = [TransactionStatus.POSTED, TransactionStatus.FAILED];

export type TransactionType = 'STK_PUSH' | 'SEND_MONEY';

/** The provider's per-transaction cap (KES 250,000), in minor units. */
export const MAX_AMOUNT_MINOR = 250_000_00;
export const MINOR_PER_SHILLING = 100;

/** Why a transaction failed: a stable code per provider result, documented in the OpenAPI document. */
export const FailureReason = {
  CANCELLED_BY_USER: 'CANCELLED_BY_USER',
  PHONE_UNREACHABLE: 'PHONE_UNREACHABLE',
  INSUFFICIENT_FUNDS: 'INSUFFICIENT_FUNDS',
  WRONG_PIN: 'WRONG_PIN',
  EXPIRED: 'EXPIRED',
  PUSH_REJECTED: 'PUSH_REJECTED',
  PAYOUT_REJECTED: 'PAYOUT_REJECTED',
  PROVIDER_INSUFFICIENT_FUNDS: 'PROVIDER_INSUFFICIENT_FUNDS',
  RECIPIENT_NOT_REGISTERED: 'RECIPIENT_NOT_REGISTERED',
  QUEUE_TIMEOUT: 'QUEUE_TIMEOUT',
  NO_RESULT: 'NO_RESULT',
  PROVIDER_ERROR: 'PROVIDER_ERROR',
} as const;
export type FailureReason = (typeof FailureReason)[keyof typeof FailureReason];

const PUSH_RESULTS: Record<string, FailureReason> = {
  '1032': FailureReason.CANCELLED_BY_USER,
  '1037': FailureReason.PHONE_UNREACHABLE,
  '1': FailureReason.INSUFFICIENT_FUNDS,
  '2001': FailureReason.WRONG_PIN,
  '1019': FailureReason.EXPIRED,
};
const PAYOUT_RESULTS: Record<string, FailureReason> = {
  '1': FailureReason.PROVIDER_INSUFFICIENT_FUNDS,
  '2040': FailureReason.RECIPIENT_NOT_REGISTERED,
};

/** A push prompt's provider result code ('0' is paid) as a failure reason. */
export const pushFailureReason = (resultCode: string): FailureReason =>
  PUSH_RESULTS[resultCode] ?? FailureReason.PROVIDER_ERROR;
export const payoutFailureReason = (resultCode: string): FailureReason =>
  PAYOUT_RESULTS[resultCode] ?? FailureReason.PROVIDER_ERROR;

/**
 * The fee a customer pays, in minor units. Collections (push prompts) are free to the payer;
 * payouts (send money) carry the provider's B2C tariff, passed on by amount band (KES).
 */
export const PAYOUT_FEES: readonly { upToShillings: number; feeShillings: number }[] = [
  { upToShillings: 100, feeShillings: 0 },
  { upToShillings: 1_500, feeShillings: 5 },
  { upToShillings: 5_000, feeShillings: 9 },
  { upToShillings: 20_000, feeShillings: 11 },
  { upToShillings: 250_000, feeShillings: 13 },
];
export function feeFor(type: TransactionType, amountMinor: number): number {
  if (type === 'STK_PUSH') return 0;
  const band = PAYOUT_FEES.find((b) => amountMinor <= b.upToShillings * MINOR_PER_SHILLING) ?? PAYOUT_FEES.at(-1)!;
  return band.feeShillings * MINOR_PER_SHILLING;
}

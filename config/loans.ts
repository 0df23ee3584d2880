import { duration } from './fields';

/** Loans: how long a schedule day lasts for the loan workflows (a day; seconds in tests). */
export const loanSettings = {
  /**
   * The length of one schedule day: a loan's workflow marks an installment DUE this long after
   * the start of its due date's day count, OVERDUE one such day later. 1d in production; tests
   * shorten it to run a loan's life in seconds.
   */
  LOAN_DAY_LENGTH: duration('1d'),
  /**
   * The repayment-reconciliation schedule: how often it looks for pushes posted on a credit
   * account and never allocated (a run in flight before repayments existed, anything lost), how
   * long after posting it leaves them to the loan's run first, and how far back it looks.
   */
  REPAYMENT_RECONCILIATION_INTERVAL: duration('10m'),
  REPAYMENT_RECONCILIATION_GRACE: duration('10m'),
  REPAYMENT_RECONCILIATION_LOOKBACK: duration('30d'),
};

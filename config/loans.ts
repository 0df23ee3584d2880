import { duration } from './fields';

/** Loans: how long a schedule day lasts for the loan workflows (a day; seconds in tests). */
export const loanSettings = {
  /**
   * The length of one schedule day: a loan's workflow marks an installment DUE this long after
   * the start of its due date's day count, OVERDUE one such day later. 1d in production; tests
   * shorten it to run a loan's life in seconds.
   */
  LOAN_DAY_LENGTH: duration('1d'),
};

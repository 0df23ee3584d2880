import { z } from 'zod';
import { addressList, duration, flag, optionalUrl } from './fields';

const shortCode = z.string().regex(/^\d{5,7}$/);

/** Mobile money: the provider's credentials and the waits of STK pushes and send-money payouts. */
export const mobileMoneySettings = {
  /** The mobile-money provider (a simulator under npm start and the tests). */
  MOBILE_MONEY_URL: optionalUrl,
  MOBILE_MONEY_CONSUMER_KEY: z.string().min(1).optional(),
  MOBILE_MONEY_CONSUMER_SECRET: z.string().min(1).optional(),
  /** Paybill number, or the store number when MOBILE_MONEY_TILL_NUMBER makes pushes Buy Goods. */
  MOBILE_MONEY_SHORT_CODE: shortCode.optional(),
  MOBILE_MONEY_PASSKEY: z.string().min(1).optional(),
  MOBILE_MONEY_TILL_NUMBER: z
    .union([z.literal(''), shortCode])
    .optional()
    .transform((v) => v || undefined),
  MOBILE_MONEY_INITIATOR_NAME: z.string().min(1).optional(),
  /** Secret: the B2C initiator's password, encrypted for every payout into its SecurityCredential. */
  MOBILE_MONEY_INITIATOR_PASSWORD: z.string().min(1).optional(),
  /** The provider's certificate that SecurityCredential is encrypted with: its file (PEM or DER), or the PEM itself. */
  MOBILE_MONEY_CERTIFICATE_PATH: z.string().min(1).optional(),
  MOBILE_MONEY_CERTIFICATE: z.string().min(1).optional(),
  /** When set, mobile-money callbacks are taken only from these source addresses (the provider's published ones). */
  MOBILE_MONEY_CALLBACK_SOURCES: addressList,

  STK_PUSH_CALLBACK_WAIT: duration('2m'),
  /** After the callback wait, how often and for how long the provider is asked before the push is given up as failed. */
  STK_PUSH_QUERY_INTERVAL: duration('15s'),
  STK_PUSH_QUERY_DEADLINE: duration('10m'),
  /**
   * Require the provider's status query before every paid push, even when its callback is
   * complete and consistent (a failure is always confirmed that way). Costs one provider call
   * per push; see the money benchmark.
   */
  STK_PUSH_CONFIRM_SUCCESS: flag(false),
  /**
   * How long send-money waits for the B2C result or a status answer that settles it. Past it
   * the payout is FAILED with NO_RESULT (QUEUE_TIMEOUT after a queue timeout) and its hold released.
   */
  SEND_MONEY_RESULT_WAIT: duration('24h'),
  /**
   * With no result by then, the provider's Transaction Status is asked about the payout. Also
   * how long the provider is given before its "not found" counts (the payout never left its
   * queue): keep it above the provider's queue timeout.
   */
  SEND_MONEY_STATUS_QUERY_AFTER: duration('2m'),
  /** Then how often it is asked again, until an answer or a result settles the payout or the wait ends. */
  SEND_MONEY_STATUS_QUERY_INTERVAL: duration('5m'),
};

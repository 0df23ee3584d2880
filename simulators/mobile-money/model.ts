import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { ChaosSettings, type ChaosRecord } from '../chaos';

/**
 * Simulator of the mobile-money provider (protocols/mobile-money.md, Daraja-like) for
 * development and tests: OAuth, push prompt, status query, B2C (the current v3 path and the
 * legacy v1 one) and the Transaction Status query (./status.ts; answers with the payout's true
 * state as decided here, by callback) with the provider's checks and error envelopes `{requestId,
 * errorCode, errorMessage}`, callbacks after a delay, and a control API under /_control to lose, duplicate,
 * delay or reorder callbacks (or deliver each as a seeded chaos plan says: `chaos`, see
 * ../../simulator-chaos.ts and ./forgeries.ts), hold status queries at "being processed", fail
 * OAuth or pushes, answer payouts late, read what was received and sent, and fetch the
 * certificate a B2C SecurityCredential is
 * encrypted with (made at start; its private key decrypts the credential, and one that does not
 * decrypt to the initiator password results in 2001, as the provider does). Access tokens stay
 * valid until they expire, however many are issued.
 *
 * Outcomes, by the last digit of the phone number:
 *
 *   digit | push (stkCallback ResultCode)          | B2C (Result ResultCode)
 *   ------+----------------------------------------+------------------------------------------
 *   0     | 0 paid, with CallbackMetadata          | 0 paid, with ResultParameters
 *   1     | 1032 cancelled by the user             | 0 paid
 *   2     | 1037 phone unreachable                 | 0 paid
 *   3     | 1 insufficient balance                 | 1 insufficient funds in the utility account
 *   4     | 2001 wrong PIN                         | 2001 initiator information invalid
 *   5     | 1019 expired                           | 0 paid
 *   6     | "SFC_IC0003" (a string ResultCode)     | 0 paid
 *   7     | 0 paid                                 | queue timeout, sent to QueueTimeOutURL
 *   8     | 0 paid                                 | 2040 recipient not a registered customer
 *   9     | 0 paid                                 | 0 paid
 *
 * *Assumed* (no public source shows them): a repeated OriginatorConversationID is refused with
 * 400 / 400.002.02 "Bad Request - Duplicate OriginatorConversationID"; a wrong Password is 400 /
 * 400.002.02 "Bad Request - Invalid Password"; an unknown CheckoutRequestID in a status query is
 * 400 / 400.002.02; an invalid token is HTTP 404 / 404.001.03; a queue timeout is a Result with
 * ResultType 1 and ResultCode "SVC0001"; simulated failures use `<status>.001.01`; a legacy v1
 * B2C gets an OriginatorConversationID like the provider's samples (`16740-34861180-1`), and any
 * it was sent is ignored; Transaction Status as ../protocol.ts marks it (2032 for a transaction
 * it does not know, which a payout that timed out in the queue is too; "Declined" with
 * `ReasonCode` for a failed payout; "Initiated" while a payout is undecided; a status Result at
 * the query's ResultURL only, its queue timeout never sent).
 */
export type CallbackMode = 'normal' | 'lose' | 'duplicate' | 'delay' | 'reorder';

export interface MobileMoneySimulatorOptions {
  consumerKey: string;
  consumerSecret: string;
  shortCode: string;
  passkey: string;
  /** B2C PartyA when it differs from `shortCode`. */
  b2cShortCode?: string;
  /**
   * When given, a B2C from another initiator, or whose SecurityCredential does not decrypt to
   * this password, results in 2001 (as the provider does): never a synchronous refusal.
   */
  initiatorName?: string;
  initiatorPassword?: string;
  port?: number;
  /** The TLS listener's port (0 or absent: a free one). */
  tlsPort?: number;
  callbackDelayMs?: number;
}

export const modeSchema = z
  .object({
    callbacks: z.enum(['normal', 'lose', 'duplicate', 'delay', 'reorder']),
    /** From a request to its decision and callback. */
    callbackDelayMs: z.number().int().min(0),
    /** 'delay' mode: how much later than the decision the callback arrives. */
    lateCallbackMs: z.number().int().min(0),
    /** 'reorder' mode: callbacks due within this window are held, then sent last-first. */
    reorderWindowMs: z.number().int().min(0),
    /** The next N status queries of each push answer "being processed" (counted from this change). */
    processingQueries: z.number().int().min(0),
    /** Status queries answer "being processed" until this long after the push. */
    processingForMs: z.number().int().min(0),
    failOAuth: z.boolean(),
    /** 0: answer pushes normally; an HTTP status; or 'timeout': hang past the client's timeout. */
    pushFailWith: z.union([z.literal(0), z.number().int().min(400).max(599), z.literal('timeout')]),
    /** 0: answer payouts normally; or an HTTP status to refuse them with (the payment is not made). */
    payoutFailWith: z.union([z.literal(0), z.number().int().min(400).max(599)]),
    /** A payout is taken (and decided, and its callback sent, after callbackDelayMs) at once, but answered this much later. */
    payoutAnswerDelayMs: z.number().int().min(0),
    /** A push answered 5xx or 'timeout' was still delivered to the phone: the indeterminate case. */
    failedPushesTakeEffect: z.boolean(),
    hangMs: z.number().int().min(0),
    tokenTtlSeconds: z.number().int().min(1),
    /**
     * The next N Transaction Status results are lost (counted from this change). Status results
     * are not lost by `callbacks: 'lose'`, which loses push and payout results only.
     */
    statusResultsLost: z.number().int().min(0),
    /** Seeded callback chaos (copies, shuffling, late, forged per callback); it overrides `callbacks`. null: off. */
    chaos: ChaosSettings.nullable(),
  })
  .strict();
export type SimulatorMode = z.infer<typeof modeSchema>;

export interface SimulatedPush {
  checkoutRequestId: string;
  merchantRequestId: string;
  phone: string;
  amount: number;
  accountReference: string;
  description: string;
  transactionType: string;
  partyB: string;
  callbackUrl: string;
  receivedAt: string;
  /** What the pusher was told: 200, a simulated failure status, or 'timeout'. */
  answeredWith: number | 'timeout';
  state: 'pending' | 'final';
  /** The decided (or, while pending, planned) result. */
  resultCode: number | string;
  resultDesc: string;
  receipt?: string;
  transactionDate?: number;
  queries: number;
  callbacksSent: number;
}

export interface SimulatedPayment {
  /** The path it came by: v3 carries our OriginatorConversationID, the legacy v1 gets one made. */
  api: 'v1' | 'v3';
  originatorConversationId: string;
  conversationId: string;
  /** InitiatorName and SecurityCredential right (the credential decrypted to the password); else the Result is 2001. */
  initiatorValid: boolean;
  phone: string;
  amount: number;
  commandId: string;
  remarks: string;
  occasion?: string;
  resultUrl: string;
  queueTimeoutUrl: string;
  receivedAt: string;
  /** When it was decided (completed, failed or timed out). */
  decidedAt?: string;
  state: 'pending' | 'completed' | 'failed' | 'timed_out';
  resultCode: number | string;
  resultDesc: string;
  transactionId: string;
  callbacksSent: number;
}

/** A Transaction Status query received, and what its Result said. */
export interface SimulatedStatusQuery {
  /** What it asked about: OriginalConversationID and/or TransactionID (a receipt), as sent. */
  originalConversationId?: string;
  receipt?: string;
  /** The query's own ids, as answered. */
  originatorConversationId: string;
  conversationId: string;
  initiatorValid: boolean;
  resultUrl: string;
  queueTimeoutUrl: string;
  occasion?: string;
  receivedAt: string;
  /** What its Result reported, once sent (or lost). */
  answered?: 'completed' | 'failed' | 'pending' | 'not_found' | 'query_failed';
  resultsSent: number;
}

export interface SentCallback {
  kind: 'stk' | 'b2c_result' | 'b2c_timeout' | 'b2c_status';
  /** CheckoutRequestID, or OriginatorConversationID for B2C (for a status Result: the payout's). */
  id: string;
  url: string;
  at: string;
  /** The receiver's HTTP answer; absent when lost or unreachable. */
  status?: number;
  error?: string;
  lost?: boolean;
  /** A forged callback (chaos mode), by the forgery's name; the others are the provider's own. */
  forgery?: string;
  body: unknown;
}

/** A callback on its way to the receiver: what it answers, where it goes and its body. */
export interface Delivery {
  kind: SentCallback['kind'];
  id: string;
  url: string;
  body: unknown;
}

export interface RunningMobileMoneySimulator {
  url: string;
  /** The same API over TLS, for clients that force https (its certificate: simulatorCertificate()). */
  tlsUrl: string;
  /** PEM of the certificate clients encrypt the B2C SecurityCredential with (also GET /_control/certificate). */
  certificate: string;
  control: {
    reset(): void;
    setMode(patch: Partial<SimulatorMode>): SimulatorMode;
    pushes(): SimulatedPush[];
    payments(): SimulatedPayment[];
    /** Transaction Status queries received, oldest first (also GET /_control/status-queries). */
    statusQueries(): SimulatedStatusQuery[];
    callbacks(): SentCallback[];
    /** Sends held 'reorder' callbacks now, last-first. */
    flush(): Promise<void>;
    /** Invalidates every issued token (clients must recover through 404.001.03). */
    revokeTokens(): void;
    /** What chaos mode did with each callback (also GET /_control/chaos). */
    chaos(): ChaosRecord[];
  };
  close(): Promise<void>;
}

export interface Outcome {
  code: number | string;
  desc: string;
}
export const PAID: Outcome = { code: 0, desc: 'The service request is processed successfully.' };
export const STK_BY_LAST_DIGIT: Record<string, Outcome> = {
  '1': { code: 1032, desc: 'Request cancelled by user' },
  '2': { code: 1037, desc: 'DS timeout user cannot be reached' },
  '3': { code: 1, desc: 'The balance is insufficient for the transaction' },
  '4': { code: 2001, desc: 'The initiator information is invalid.' },
  '5': { code: 1019, desc: 'Transaction has expired' },
  '6': { code: 'SFC_IC0003', desc: 'Unable to process the request (simulated string ResultCode)' },
};
export const B2C_BY_LAST_DIGIT: Record<string, Outcome | 'queue_timeout'> = {
  '3': { code: 1, desc: 'The balance is insufficient for the transaction.' },
  '4': { code: 2001, desc: 'The initiator information is invalid.' },
  '7': 'queue_timeout',
  '8': {
    code: 2040,
    desc: "Credit Party customer type (Unregistered or Registered Customer) can't be supported by the service.",
  },
};
export const INVALID_INITIATOR: Outcome = { code: 2001, desc: 'The initiator information is invalid.' };
/** What a payout results in: 2001 for a wrong initiator or credential, else by the phone's last digit. */
export const payoutOutcome = (payment: Pick<SimulatedPayment, 'initiatorValid' | 'phone'>) =>
  payment.initiatorValid ? (B2C_BY_LAST_DIGIT[payment.phone.slice(-1)] ?? PAID) : INVALID_INITIATOR;

export const BAD_REQUEST = '400.002.02';
export const INVALID_TOKEN = '404.001.03';
export const PROCESSING = '500.001.1001';
/**
 * State is kept in memory and bounded, oldest forgotten first. Not access tokens: a token is
 * valid until it expires, however many are issued, so expired ones are what is dropped.
 */
export const LIMITS = { records: 1000, callbacks: 500, ids: 10_000, liveTokens: 10_000 };

const EAT_OFFSET_MS = 3 * 60 * 60 * 1000;
/** East Africa Time digits, YYYYMMDDHHmmssSSS. */
export const eatDigits = (at = new Date()) => new Date(at.getTime() + EAT_OFFSET_MS).toISOString().replace(/\D/g, '');
export const digits = (n: number) => Array.from({ length: n }, () => randomInt(10)).join('');
export const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export const requestId = () => `${digits(5)}-${digits(8)}-1`;

export function remember<K, V>(map: Map<K, V>, key: K, value: V, cap: number) {
  map.delete(key);
  map.set(key, value);
  while (map.size > cap) map.delete(map.keys().next().value as K);
}

export const isUrl = (value: unknown) =>
  typeof value === 'string' && /^https?:\/\/[^\s]+$/.test(value) && URL.canParse(value);
export const text = (value: unknown, max: number) =>
  typeof value === 'string' && value.length >= 1 && value.length <= max;
/** Amounts may come as a number or a digit string; either way a positive whole number. */
export const wholeAmount = (value: unknown) => {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
};

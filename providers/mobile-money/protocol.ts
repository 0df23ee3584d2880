import { isKenyanMobile } from '../../domain/identifiers';

/**
 * The mobile-money provider's protocol (protocols/mobile-money.md, Daraja-like): its requests
 * and answers as our code sees them, its error envelope and error classes, and the conversions
 * at its edge. Callers speak whole shillings and `+254...` numbers; the provider's forms
 * (`2547...`, PascalCase bodies, `YYYYMMDDHHmmss`) exist only in this folder. Nothing here logs,
 * and no error message carries a credential, a token or a phone number.
 */
export interface MobileMoneyClientOptions {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  /** Paybill number, or the store number of a Buy Goods till. */
  shortCode: string;
  passkey: string;
  /** B2C initiator, and its password, encrypted per request into the SecurityCredential with `certificate`. */
  initiatorName: string;
  initiatorPassword: string;
  /** The provider's X.509 certificate for the environment, PEM or DER (see ./security-credential.ts). */
  certificate: string | Buffer;
  /** The B2C paying shortcode when it differs from `shortCode`. */
  b2cShortCode?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
  clock?: () => Date;
}

export interface StkPushRequest {
  /** Whole shillings (see toWholeShillings). */
  amount: number;
  /** `+2547XXXXXXXX` or `+2541XXXXXXXX`. */
  phone: string;
  /** Should carry an unguessable token: callbacks are not signed. */
  callbackUrl: string;
  /** Truncated to 12 characters (the provider does not echo it back). */
  accountReference: string;
  /** Truncated to 13 characters. */
  description: string;
  transactionType: 'CustomerPayBillOnline' | 'CustomerBuyGoodsOnline';
  /** Required for Buy Goods (the store is `shortCode`, the till is PartyB); not for paybill. */
  till?: string;
}

export interface StkPushAccepted {
  merchantRequestId: string;
  checkoutRequestId: string;
  /** '0' means accepted for processing, not paid. */
  responseCode: string;
  customerMessage: string;
}

/** `unknown`: the provider refused the query itself (a CheckoutRequestID it does not know). */
export type StkQueryResult =
  { state: 'pending' } | { state: 'unknown' } | { state: 'final'; resultCode: string; resultDesc: string };

export interface B2cRequest {
  /** Use our transaction id: the provider refuses a repeat, which makes a retry safe. */
  originatorConversationId: string;
  amount: number;
  phone: string;
  resultUrl: string;
  queueTimeoutUrl: string;
  /** Truncated to 100 characters. */
  remarks: string;
  occasion?: string;
  commandId?: 'BusinessPayment' | 'SalaryPayment' | 'PromotionPayment';
}

export interface B2cAccepted {
  conversationId: string;
  originatorConversationId: string;
  responseCode: string;
}

/**
 * A Transaction Status query (see "Transaction Status" below): by the original request's
 * OriginatorConversationID (ours, for a v3 payout) and/or the M-Pesa receipt.
 */
export interface TransactionStatusRequest {
  originalConversationId?: string;
  /** The M-Pesa receipt (the provider's TransactionID), when known. */
  receipt?: string;
  /** Where the status comes, and the queue timeout of the query itself: each should carry an unguessable token. */
  resultUrl: string;
  queueTimeoutUrl: string;
  /** Truncated to 100 characters. */
  remarks: string;
  occasion?: string;
}

/** Accepted for processing, nothing more: the status comes to the ResultURL. Both ids are the query's own. */
export interface TransactionStatusAccepted {
  conversationId: string;
  originatorConversationId: string;
  responseCode: string;
}

export interface MobileMoneyClient {
  /** The cached access token, fetched or refreshed as needed. For diagnostics: never log it. */
  accessToken(): Promise<string>;
  stkPush(request: StkPushRequest): Promise<StkPushAccepted>;
  stkQuery(checkoutRequestId: string): Promise<StkQueryResult>;
  b2c(request: B2cRequest): Promise<B2cAccepted>;
  transactionStatus(request: TransactionStatusRequest): Promise<TransactionStatusAccepted>;
}

export type MobileMoneyOperation = 'oauth' | 'stkPush' | 'stkQuery' | 'b2c' | 'transactionStatus';

export const ERROR_CODES = {
  badRequest: '400.002.02',
  invalidToken: '404.001.03',
  processing: '500.001.1001',
} as const;

/**
 * A failed provider call. `indeterminate` is the one thing a workflow must look at before a
 * push: true when the provider may have acted on the request (timeout, connection lost after
 * sending, 5xx, an unreadable success answer), so it must not be sent again, only followed up
 * by callback or status query; false when it certainly was not acted on (a 4xx, usually with the
 * error envelope; connection refused; an `oauth` failure, which happens before the request).
 */
export class MobileMoneyError extends Error {
  readonly operation: MobileMoneyOperation;
  readonly httpStatus?: number;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly requestId?: string;
  readonly indeterminate: boolean;

  constructor(
    message: string,
    details: {
      operation: MobileMoneyOperation;
      indeterminate: boolean;
      httpStatus?: number;
      errorCode?: string;
      errorMessage?: string;
      requestId?: string;
    },
  ) {
    super(message);
    this.name = 'MobileMoneyError';
    this.operation = details.operation;
    this.indeterminate = details.indeterminate;
    this.httpStatus = details.httpStatus;
    this.errorCode = details.errorCode;
    this.errorMessage = details.errorMessage;
    this.requestId = details.requestId;
  }

  /** B2C refused because the OriginatorConversationID was used before (*assumed* wording). */
  get duplicateRequest(): boolean {
    return (
      this.operation === 'b2c' &&
      this.errorCode === ERROR_CODES.badRequest &&
      /duplicate/i.test(this.errorMessage ?? '')
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Transaction Status (added to protocols/mobile-money.md's notes here; that file is shared)
//
// Sources: developer.safaricom.co.ke/apis/TransactionStatus (read through the glama.ai mirror,
// daraja_docs_v3/docs/TransactionStatus.md), the v1-era Daraja sample kept in
// Ghostscypher/php-mpesa mpesa_endpoints.md, and the clients mpesakit (schemas.py), mpesa-node
// 0.1.3 (endpoints/transaction-status.js), mpesa-api 3.0.2 (lib/index.js), mpesa-sdk-kotlin
// (TransactionStatusRequest.kt).
//
// - "A secondary reconciliation mechanism when Callbacks are not received"; B2C transactions
//   among others. `POST /mpesa/transactionstatus/v1/query`, Bearer token, PascalCase body:
//   `Initiator`, `SecurityCredential` (as for B2C), `CommandID` "TransactionStatusQuery",
//   `TransactionID` (the M-Pesa receipt) and/or `OriginalConversationID` (the Originator
//   Conversation ID of the transaction asked about; "either"), `PartyA` (our shortcode),
//   `IdentifierType` ("4": organization shortcode; 1 MSISDN, 2 till), `ResultURL`,
//   `QueueTimeOutURL`, `Remarks` (up to 100), `Occasion` (optional, up to 100). The spellings
//   differ between sources: the page's sample writes "Command ID" and "Transaction ID" (its
//   table CommandID, TransactionID), the Kotlin client sends "OriginatorConversationId" and the
//   page's table "QueueTimeoutURL"; we send the table's OriginalConversationID (mpesakit's too)
//   and QueueTimeOutURL (the sample's and every client's). mpesa-node and mpesa-api send only
//   TransactionID.
// - The answer is `{OriginatorConversationID, ConversationID, ResponseCode: "0",
//   ResponseDescription: "Accept the service request successfully."}`: accepted, nothing more;
//   both ids are the query's own. Errors in the usual envelope.
// - The status comes as a Result to the ResultURL, the B2C envelope: `Result.ResultCode`/
//   `ResultDesc` say whether the query succeeded (documented: 0; "SFC_IC0003 The operator does
//   not exist."); `Result.OriginatorConversationID`/`ConversationID` are the query's ids (as it
//   was answered), `Result.TransactionID` a placeholder (`MBN0000000`). What is known of the
//   transaction asked about is in `ResultParameters` by Key: `ReceiptNo`, `Amount` ("300" or
//   10), `TransactionStatus` ("Completed"), `FinalisedTime` and `InitiatedTime`
//   (`YYYYMMDDHHmmss`, text or number), `OriginatorConversationID` (v1-era sample: "Originator
//   Conversation ID"), `ConversationID` ("Conversation ID"), `DebitPartyName` (`600310 -
//   Name`), `CreditPartyName` (`2547... - Name`, v1-era sample; the current page lists
//   `DebitPartyName` twice, the second with the customer: read here as the credit party),
//   `DebitAccountType`, `DebitPartyCharges` (`Fee For B2C Payment|KES|22.40`), `ReasonType`,
//   `TransactionReason` (often without Value). `ReferenceData` echoes `Occasion`.
// - Transaction statuses (the page's FAQ): Initiated, Authorized / Pending Authorized (not
//   final), then Cancelled, Declined, Completed or Expired (final).
// *Assumed* (no public source shows them):
// - a transaction the provider does not know (never reached its core, or timed out in its queue
//   unprocessed) is a Result with ResultCode 2032 "The transaction receipt number does not
//   exist." and no ResultParameters (2032 with that text is the one M-Pesa core not-found
//   answer a public report shows, from Safaricom Ethiopia's receipt lookup, not a Daraja page);
// - a payout M-Pesa declined reports TransactionStatus "Declined", its own result code in
//   `ReasonCode` and its description in `TransactionReason`;
// - every other non-zero ResultCode (2001 "The initiator information is invalid.", SFC_IC0003)
//   is the query's own failure and says nothing about the transaction asked about;
// - the query's QueueTimeOutURL body is the Result envelope, as for B2C.

// What these codes and statuses mean to a payout: domain/mobile-money/send-money-status.ts.

// ---------------------------------------------------------------------------------------------
// Conversions at the edge

/** `+254712345678` → `254712345678`; anything else (other countries, 07..., spaces) is refused. */
export function toProviderPhone(phone: string): string {
  if (!isKenyanMobile(phone))
    throw new RangeError('phone must be a Kenyan mobile number, +2547XXXXXXXX or +2541XXXXXXXX');
  return phone.slice(1);
}

/** Money.value (integer cents) → whole shillings; the provider cannot move cents, so none may be lost. */
export function toWholeShillings(minorUnits: number): number {
  if (!Number.isSafeInteger(minorUnits) || minorUnits <= 0 || minorUnits % 100 !== 0) {
    throw new RangeError(`amount ${minorUnits} (minor units) is not a positive whole number of shillings`);
  }
  return minorUnits / 100;
}

/** Daraja reads Timestamp as East Africa Time (UTC+3 all year, no daylight saving). */
const EAT_OFFSET_MS = 3 * 60 * 60 * 1000;

/** `YYYYMMDDHHmmss` in Nairobi time. */
export function providerTimestamp(at: Date): string {
  return new Date(at.getTime() + EAT_OFFSET_MS).toISOString().replace(/\D/g, '').slice(0, 14);
}

/** The inverse of providerTimestamp (e.g. a callback's TransactionDate). */
export function fromProviderTimestamp(timestamp: string | number): Date {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(String(timestamp));
  if (!m) throw new RangeError('provider timestamp must be YYYYMMDDHHmmss');
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s) - EAT_OFFSET_MS);
}

export function stkPassword(shortCode: string, passkey: string, timestamp: string): string {
  return Buffer.from(`${shortCode}${passkey}${timestamp}`).toString('base64');
}

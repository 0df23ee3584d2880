/**
 * The bank's protocol: the banking-as-a-service bank that opens our customers' current accounts
 * and changes their registered mobile number. No public standard covers this, so the protocol is
 * ours, modelled on real East-African APIs; what each part was taken from is named here.
 *
 * Modelled on (public documentation):
 * - The onboarding resource: Choice Bank (Kenya) BaaS API, personal onboarding: its one-call
 *   form `POST /onboarding/v3/submitEasyOnboardingRequest` (its current-account form takes the
 *   same fields and sends the images through a separate `/onboarding/uploadMedia`), and
 *   `POST /onboarding/getOnboardingStatus` to read it back at any time. From it: the partner's
 *   own reference on the request, which the status lookup also accepts; `firstName`, `middleName`
 *   (optional), `lastName`; the date of birth as `yyyy-MM-dd`; `idType` codes `101` (Kenyan
 *   national ID), `102` (Kenyan alien ID), `103` (passport) with `idNumber`; `email` optional;
 *   the images inline as base64 `frontSidePhoto`, `backSidePhoto` (required for 101 and 102, not
 *   for a passport) and `selfiePhoto`; an onboarding that is decided later (under review, then
 *   approved or rejected with a reason), and an account number assigned only when it succeeds.
 * - Authentication: OAuth 2.0 client credentials (RFC 6749 §4.4) as Kenyan gateways issue them
 *   (Co-operative Bank's Co-op Connect consumer key and secret; Kopo Kopo's `POST /oauth/token`:
 *   hour-long tokens, no refresh token), the client authenticating with HTTP Basic (§2.3.1; Kopo
 *   Kopo takes the pair in the form instead, which the RFC discourages), token errors as RFC 6749
 *   §5.2 (`invalid_client`, `unsupported_grant_type`), and Bearer use as RFC 6750 (401 with
 *   `WWW-Authenticate: Bearer error="invalid_token"` for an expired token).
 *   Choice Bank signs every body with a shared key instead; that is not used here.
 * - Idempotency: the IETF Idempotency-Key header draft (draft-ietf-httpapi-idempotency-key-header):
 *   the key on every POST, 400 when it is missing, a retry with the same key and payload answered
 *   with the first result (marked `Idempotent-Replayed: true`, Stripe's header).
 *
 * Our own choices (no public source shows them):
 * - Paths: `POST {base}/oauth2/token`; `POST {base}/v1/onboardings` and
 *   `GET {base}/v1/onboardings/by-reference/{partnerReference}`;
 *   `POST {base}/v1/customers/{customerId}/mobile-number-changes` and
 *   `GET {base}/v1/customers/{customerId}/mobile-number-changes/by-reference/{partnerReference}`.
 * - JSON in camelCase with `customer` and `documents` objects; mobile numbers in E.164
 *   (`+2547XXXXXXXX`; Choice splits `countryCode` and `mobile`); images raw base64 (no `data:`
 *   prefix), JPEG or PNG, at most 5 MiB each. Choice's questionnaire (address, KRA PIN,
 *   employment, income) is left out: the account opens on the identity our KYC verified.
 * - `partnerReference` (our activation or change id) in the body as the business key, forever
 *   readable, and the same value as `Idempotency-Key`, whose replay window is limited. A key
 *   reused with a different payload (or another path) answers 409 `IDEMPOTENCY_KEY_REUSED` (the
 *   draft says 422; 409 is this service's own rule for its Idempotency-Key, spec §4.3). A
 *   `partnerReference` already taken under another key answers 409 `DUPLICATE_REFERENCE`.
 * - The bank acts on a submission before it answers: a 5xx or a lost answer may hide an
 *   onboarding or a change that happened. Only the status read tells; a 404 there means the bank
 *   holds nothing under that reference.
 * - Answers: 201 when decided at once (`ACTIVE`, `COMPLETED`), 202 when `PENDING`; the status
 *   read 200 with the same resource, `REJECTED` with `rejection: {code, reason}` included. A
 *   refusal at submission is an error envelope `{code, message, fields?: [{field, issue}]}` with
 *   the codes below; the bank's customer number (`customerId`, a CIF) exists from intake.
 * - The mobile-number change: the owner's authorization (OTP) is ours (spec §4.7); the bank only
 *   applies the change, at once or after review, and refuses a number another customer holds.
 */

// ---------------------------------------------------------------------------------------------
// Wire forms

/** The bank's identity-document codes (Choice Bank's), and ours (the KYC subject's identity_type). */
export const BANK_ID_TYPES = { IDENTITY_CARD: '101', ALIEN_CARD: '102', PASSPORT: '103' } as const;
export type CustomerIdType = keyof typeof BANK_ID_TYPES;
export type BankIdType = (typeof BANK_ID_TYPES)[CustomerIdType];
/** Documents with a back side the bank requires. */
export const ID_TYPES_WITH_BACK: readonly BankIdType[] = ['101', '102'];

export interface OnboardingBody {
  partnerReference: string;
  customer: {
    firstName: string;
    middleName?: string;
    lastName: string;
    /** `YYYY-MM-DD`. */
    dateOfBirth: string;
    idType: BankIdType;
    idNumber: string;
    /** E.164. */
    mobileNumber: string;
    email?: string;
  };
  documents: { frontSidePhoto: string; backSidePhoto?: string; selfiePhoto: string };
}

export type OnboardingStatus = 'PENDING' | 'ACTIVE' | 'REJECTED';

export interface Rejection {
  code: RefusalCode;
  reason: string;
}

export interface OnboardingResource {
  onboardingId: string;
  partnerReference: string;
  status: OnboardingStatus;
  /** The bank's customer number, from intake; null only when refused at intake. */
  customerId: string | null;
  /** Once ACTIVE. */
  accountNumber: string | null;
  rejection: Rejection | null;
  createdAt: string;
  decidedAt: string | null;
}

export interface MobileNumberChangeBody {
  partnerReference: string;
  /** E.164. */
  newMobileNumber: string;
}

export type MobileNumberChangeStatus = 'PENDING' | 'COMPLETED' | 'REJECTED';

export interface MobileNumberChangeResource {
  changeId: string;
  partnerReference: string;
  customerId: string;
  status: MobileNumberChangeStatus;
  rejection: Rejection | null;
  createdAt: string;
  completedAt: string | null;
}

export interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer';
  /** Seconds. */
  expires_in: number;
}

export interface ErrorEnvelope {
  code: string;
  message: string;
  /** For VALIDATION_ERROR: the offending fields, by path (`customer.dateOfBirth`). */
  fields?: { field: string; issue: string }[];
}

/** The bank's decisions against a customer or a change: definite, never worth a retry as they are. */
export const REFUSALS = {
  /** A live customer already holds this identity document. */
  DUPLICATE_CUSTOMER: 409,
  /** Another customer holds the mobile number. */
  NUMBER_TAKEN: 409,
  /** Names or date of birth do not match the national registry for this document. */
  ID_MISMATCH: 422,
  /** An image unreadable, of another document, expired, or a selfie not matching it. */
  INVALID_DOCUMENT: 422,
  /** Younger than 18. */
  UNDERAGE: 422,
} as const;
export type RefusalCode = keyof typeof REFUSALS;

/** Every error code the bank answers besides the refusals. */
export const ERROR_CODES = {
  validation: 'VALIDATION_ERROR',
  invalidJson: 'INVALID_JSON',
  unsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  payloadTooLarge: 'PAYLOAD_TOO_LARGE',
  invalidToken: 'INVALID_TOKEN',
  notFound: 'NOT_FOUND',
  customerNotFound: 'CUSTOMER_NOT_FOUND',
  customerNotActive: 'CUSTOMER_NOT_ACTIVE',
  changeInProgress: 'CHANGE_IN_PROGRESS',
  idempotencyKeyReused: 'IDEMPOTENCY_KEY_REUSED',
  duplicateReference: 'DUPLICATE_REFERENCE',
  rateLimited: 'RATE_LIMITED',
  internal: 'INTERNAL_ERROR',
  timeout: 'GATEWAY_TIMEOUT',
} as const;

// ---------------------------------------------------------------------------------------------
// What our code sees

export type BankOperation =
  'token' | 'onboard' | 'onboardingStatus' | 'changeMobileNumber' | 'mobileNumberChangeStatus';

/**
 * A bank call that did not give an answer to act on. `indeterminate`: a submission that the bank
 * may have acted on (no answer in time, a dropped connection, a 5xx, an unreadable success):
 * never submit again blindly, read the status (a read is never indeterminate). `transient`: the
 * bank's or the network's trouble (429, 5xx, timeouts), worth trying later. Neither: a definite
 * refusal, `code` saying which (a REFUSALS code, VALIDATION_ERROR with `fields`,
 * IDEMPOTENCY_KEY_REUSED, NOT_FOUND...). A refusal read through a status call has no httpStatus.
 * No message carries a credential, a token, an image, an id number or a phone number.
 */
export class BankError extends Error {
  override readonly name = 'BankError';
  constructor(
    message: string,
    readonly details: {
      operation: BankOperation;
      httpStatus?: number;
      code?: string;
      /** Field paths the bank named (VALIDATION_ERROR). */
      fields?: string[];
      indeterminate: boolean;
      transient: boolean;
    },
  ) {
    super(message);
  }
}

export interface OnboardingRequest {
  /** Our activation id: the bank's partnerReference and the Idempotency-Key. */
  reference: string;
  customer: {
    firstName: string;
    middleName?: string;
    lastName: string;
    /** `YYYY-MM-DD`. */
    dateOfBirth: string;
    idType: CustomerIdType;
    idNumber: string;
    /** `+254...`. */
    mobileNumber: string;
    email?: string;
  };
  /** Base64 JPEG or PNG; `idBack` for an identity card or an alien card. */
  documents: { idFront: string; idBack?: string; selfie: string };
}

export interface Onboarding {
  status: 'ACTIVE' | 'PENDING';
  bankCustomerId: string;
  /** Once ACTIVE. */
  accountNumber?: string;
}

export interface MobileNumberChange {
  status: 'COMPLETED' | 'PENDING';
}

export interface BankClient {
  /** Opens a customer's current account; a refusal (or a status read finding one) is a BankError. */
  onboard(input: OnboardingRequest): Promise<Onboarding>;
  /** The onboarding under our reference: after PENDING, or after an indeterminate onboard. */
  onboardingStatus(reference: string): Promise<Onboarding>;
  changeMobileNumber(input: {
    reference: string;
    bankCustomerId: string;
    newMobileNumber: string;
  }): Promise<MobileNumberChange>;
  /** The change under our reference: after PENDING, or after an indeterminate change. */
  mobileNumberChangeStatus(input: { reference: string; bankCustomerId: string }): Promise<MobileNumberChange>;
}

/** How a bank client reaches the bank: ./client.ts is built from them and hands them to ./transport.ts. */
export interface BankClientOptions {
  /** The bank's API root (our simulator's in development and tests). */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The whole exchange of one call; onboardings carry images, so it is generous. */
  timeoutMs?: number;
  /** PEM of a CA to trust besides the system's (the simulator's certificate in development). */
  ca?: string;
}

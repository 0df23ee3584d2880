/**
 * The e-mail provider's protocol: SendGrid's v3 Mail Send API, as its public API reference, its
 * errors page and its Event Webhook reference describe it.
 *
 * - Send: `POST {base}/v3/mail/send` (base https://api.sendgrid.com, or https://api.eu.sendgrid.com
 *   for EU subusers), headers `Authorization: Bearer <API key>` and `Content-Type: application/json`,
 *   body `{personalizations: [{to: [{email, name?}], subject?}], from: {email, name?}, subject,
 *   content: [{type, value}]}`. `content` holds at least one block; when both are present,
 *   text/plain comes before text/html (the API refuses the other order). A subject is required at
 *   the top level unless every personalization has its own.
 * - Success: HTTP 202 Accepted (valid and queued), an empty body, and the message's id in the
 *   `X-Message-Id` header. (HTTP 200 is sandbox mode only: valid but not queued, nothing sent.)
 * - Refusals: `{errors: [{message, field, help}]}`, several at once when several fields are wrong.
 *   400 for the request's content, each error naming its field (`personalizations`,
 *   `personalizations.0.to`, `personalizations.0.to.0.email` "Does not contain a valid address.",
 *   `from.email`, `subject`, `content`, `content.0.value`); 401 `The provided authorization grant
 *   is invalid, expired, or revoked` (field and help null) for a wrong key; 403 `The from address
 *   does not match a verified Sender Identity. ...` (field `from`) for a from address that is
 *   neither a verified single sender nor on an authenticated domain; 413 a payload over the
 *   limit (30 MB for the whole message); 415 a body that is not application/json; 429 rate
 *   limited; 500 and 503 SendGrid's own failures.
 * - Event Webhook: SendGrid POSTs a JSON array of events to the URL set in its settings, batched,
 *   each `{email, timestamp (Unix seconds), event, sg_event_id, sg_message_id, smtp-id, ...}`;
 *   delivery events are processed, deferred, delivered (`response`, e.g. `250 OK`), dropped
 *   (`reason`) and bounce (`reason`, `status` e.g. 5.1.1, `type` bounce or blocked).
 *
 * *Assumed* (no public source we could read shows them exactly):
 * - a missing `Authorization` header answers the same 401 as a wrong key;
 * - a body that is not JSON at all answers 400 `{errors: [{message: 'Bad Request', field: null,
 *   help: null}]}`, one that is not `application/json` 415 with a similar envelope;
 * - the wording of the refusals for a content block without a type, for text/html given before
 *   text/plain, for 413, 429 and 5xx (their status codes are documented, their bodies are not);
 * - a 429 carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix
 *   seconds) as SendGrid's other v3 endpoints do;
 * - an event's `sg_message_id` begins with the send's `X-Message-Id` followed by a dot (so
 *   `messageIdOf` maps an event back to its send); the suffix's exact shape varies;
 * - the simulator does not sign its event posts (SendGrid's Signed Event Webhook adds an ECDSA
 *   signature in `X-Twilio-Email-Event-Webhook-Signature` that a production receiver verifies).
 */

export interface EmailAddress {
  email: string;
  name?: string;
}

export type ContentType = 'text/plain' | 'text/html';

export interface MailContent {
  type: ContentType | string;
  value: string;
}

export interface Personalization {
  to: EmailAddress[];
  subject?: string;
}

/** The body of `POST /v3/mail/send`, as much of it as we use. */
export interface MailSendRequest {
  personalizations: Personalization[];
  from: EmailAddress;
  subject?: string;
  content: MailContent[];
}

/** One refusal in SendGrid's error envelope. */
export interface SendGridErrorItem {
  message: string;
  field: string | null;
  help: string | null;
}

export interface SendGridErrorBody {
  errors: SendGridErrorItem[];
}

export const MAIL_SEND_PATH = '/v3/mail/send';
export const MESSAGE_ID_HEADER = 'x-message-id';
/** *Assumed* (see the header comment): the rate limit's reset time, in Unix seconds. */
export const RATE_LIMIT_RESET_HEADER = 'x-ratelimit-reset';

/** SendGrid's refusals, word for word where its documentation or its answers show them. */
export const Refusal = {
  unauthorized: 'The provided authorization grant is invalid, expired, or revoked',
  unverifiedSender:
    'The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved. ' +
    'Visit https://sendgrid.com/docs/for-developers/sending-email/sender-identity/ to see the Sender Identity requirements',
  personalizationsRequired: 'The personalizations field is required and must have at least one personalization.',
  toRequired: 'The to parameter is required for all personalization objects.',
  invalidAddress: 'Does not contain a valid address.',
  fromRequired:
    'The from object must be provided for every email send. It is an object that requires the email parameter, ' +
    'but may also contain a name parameter.  e.g. {"email" : "example@example.com"}  or ' +
    '{"email" : "example@example.com", "name" : "Example Recipient"}.',
  invalidFrom: 'The from email does not contain a valid address.',
  subjectRequired:
    'The subject is required. You can get around this requirement if you use a template with a subject defined ' +
    'or if every personalization has a subject defined.',
  contentRequired:
    'Unless a valid template_id is provided, the content parameter is required. There must be at least one defined ' +
    'content block. We typically suggest both text/plain and text/html blocks are included, but only one block is ' +
    'required.',
  contentValue: 'The content value must be a string at least one character in length.',
  /** *Assumed* wording. */
  contentType: 'The content type must be a string at least one character in length.',
  /** *Assumed* wording. */
  contentOrder:
    'If present, text/plain and text/html may only be provided in the following order: text/plain, text/html.',
  /** *Assumed* wording. */
  badRequest: 'Bad Request',
  /** *Assumed* wording. */
  unsupportedMediaType: 'Content-Type should be application/json.',
  /** *Assumed* wording. */
  payloadTooLarge: 'Payload Too Large',
  /** *Assumed* wording. */
  tooManyRequests: 'too many requests',
  /** *Assumed* wording. */
  serverError: 'Internal Server Error',
} as const;

/** SendGrid's limit on a whole message, attachments included. */
export const MAX_MESSAGE_BYTES = 30 * 1024 * 1024;

/** Delivery events our service reads (engagement events, opens and clicks, are not used). */
export const DELIVERY_EVENTS = ['processed', 'deferred', 'delivered', 'dropped', 'bounce'] as const;
export type DeliveryEventName = (typeof DELIVERY_EVENTS)[number];
/** Final: nothing more will happen to the message. */
export const isFinalEvent = (event: string) => event === 'delivered' || event === 'dropped' || event === 'bounce';

/** One Event Webhook event (a POST carries an array of them). */
export interface EmailEvent {
  email: string;
  timestamp: number;
  event: DeliveryEventName | string;
  sg_event_id: string;
  sg_message_id: string;
  'smtp-id'?: string;
  /** delivered, deferred: the receiving server's answer. */
  response?: string;
  /** bounce, dropped: why. */
  reason?: string;
  /** bounce: the enhanced SMTP status, e.g. 5.1.1. */
  status?: string;
  /** bounce: `bounce` (the address) or `blocked` (the receiving server refused us). */
  type?: 'bounce' | 'blocked';
}

/** The send's `X-Message-Id` an event belongs to. *Assumed*: the part of sg_message_id before its first dot. */
export const messageIdOf = (sgMessageId: string) => sgMessageId.split('.')[0];

/**
 * A send that did not go out. `indeterminate`: the request may have reached SendGrid (a timeout,
 * a dropped connection, its own 5xx): sending again may e-mail the address twice. `transient`:
 * worth a retry later (rate limited, SendGrid's own failure, the network). `field`: the first
 * field a 400 or 403 named.
 */
export class EmailError extends Error {
  override readonly name = 'EmailError';
  constructor(
    message: string,
    readonly details: {
      httpStatus?: number;
      field?: string;
      /** 429: how long SendGrid asks us to wait, when it says (X-RateLimit-Reset). */
      retryAfterMs?: number;
      indeterminate: boolean;
      transient: boolean;
    },
  ) {
    super(message);
  }
}

/** What our client answers for one message sent to one address. */
export interface EmailSent {
  /** SendGrid's X-Message-Id: events name the message by it (see messageIdOf). */
  messageId: string;
}

export interface EmailClient {
  /**
   * Sends one message to one address, as text and, when given, HTML; throws EmailError when it
   * did not go out. Neither the API key nor the message (it carries single-use links) ever
   * reaches an error message.
   */
  send(input: { to: string; subject: string; text: string; html?: string }): Promise<EmailSent>;
}

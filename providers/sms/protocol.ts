/**
 * The SMS gateway's protocol: Africa's Talking's messaging API (the usual East-African gateway),
 * as its public documentation describes it.
 *
 * - Send: `POST {base}/version1/messaging`, body `application/x-www-form-urlencoded` with
 *   `username` (the application's), `to` (comma-separated numbers in international format),
 *   `message`, and optionally `from` (a registered sender id or shortcode); headers `apiKey` and
 *   `Accept: application/json` (XML otherwise). Success is HTTP 201 with
 *   `{SMSMessageData: {Message, Recipients: [{statusCode, number, status, cost, messageId}]}}`:
 *   one entry per recipient, each accepted (100 Processed, 101 Sent, 102 Queued) or refused.
 * - Delivery reports: the gateway POSTs `application/x-www-form-urlencoded` to the callback URL set
 *   on the dashboard: `id` (the messageId), `status` (Sent, Submitted, Buffered; final: Success,
 *   Failed, Rejected, AbsentSubscriber, Expired), `phoneNumber`, `networkCode`, and `failureReason`
 *   when Failed or Rejected.
 *
 * *Assumed* (no public source shows them exactly): a refused authentication answers 401 with a
 * plain-text reason, a missing form field 400 with a plain-text reason.
 */

/** Per-recipient status codes of a send. */
export const RecipientStatus = {
  100: 'Processed',
  101: 'Sent',
  102: 'Queued',
  401: 'RiskHold',
  402: 'InvalidSenderId',
  403: 'InvalidPhoneNumber',
  404: 'UnsupportedNumberType',
  405: 'InsufficientBalance',
  406: 'UserInBlacklist',
  407: 'CouldNotRoute',
  409: 'DoNotDisturbRejection',
  500: 'InternalServerError',
  501: 'GatewayError',
  502: 'RejectedByGateway',
} as const;
export type RecipientStatusCode = keyof typeof RecipientStatus;

/** Accepted by the gateway (not yet delivered: a delivery report says that). */
export const isAccepted = (statusCode: number) => statusCode >= 100 && statusCode < 200;
/** A refusal worth sending again later: the gateway's own trouble, not the number's or ours. */
export const isTransient = (statusCode: number) => statusCode === 500 || statusCode === 501;

export interface SendRecipient {
  statusCode: number;
  number: string;
  status: string;
  cost: string;
  messageId: string;
}

export interface SendResponse {
  SMSMessageData: { Message: string; Recipients: SendRecipient[] };
}

/** Delivery report statuses (the last five are final), as the store keeps them. */
import type { DeliveryStatus } from '../../domain/current-account/delivery-reports';
export { type DeliveryStatus, DELIVERY_STATUSES, isFinalDelivery } from '../../domain/current-account/delivery-reports';

export interface DeliveryReport {
  id: string;
  status: DeliveryStatus;
  phoneNumber: string;
  networkCode: string;
  failureReason?: string;
}

/**
 * A send that did not go out. `indeterminate`: the request may have reached the gateway (a
 * timeout, a dropped connection): sending again may text the number twice. `transient`: the
 * gateway's own failure, worth a retry.
 */
export class SmsError extends Error {
  override readonly name = 'SmsError';
  constructor(
    message: string,
    readonly details: { httpStatus?: number; statusCode?: number; indeterminate: boolean; transient: boolean },
  ) {
    super(message);
  }
}

/** What our client answers for one text sent to one number. */
export interface SmsSent {
  messageId: string;
  statusCode: number;
  status: string;
  cost: string;
}

export interface SmsClient {
  /** Sends `message` to one number (international format); throws SmsError when it did not go out. */
  send(input: { to: string; message: string }): Promise<SmsSent>;
}

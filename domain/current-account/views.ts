import { phoneAuthorizeUrl, phoneChangeUrl, phoneConfirmUrl } from './links';
import { isoOrNull as iso } from '../iso';

/**
 * The current-account self-service resources as the API answers them, drawn from their rows or
 * from a webhook event's snapshot of one (their schemas, for the OpenAPI document, are in api/).
 */

export interface ActivationFields<S extends string = string> {
  id: string;
  status: S;
  channel: string;
  rejection_reason: string | null;
  created_at: Date;
  otp_confirmed_at: Date | null;
  completed_at: Date | null;
  rejected_at: Date | null;
}

export function activationView<S extends string>(row: ActivationFields<S>) {
  return {
    id: row.id,
    status: row.status,
    created_at: iso(row.created_at)!,
    otp_confirmed_at: iso(row.otp_confirmed_at),
    completed_at: iso(row.completed_at),
    rejection_reason: row.rejection_reason,
    current_verification: row.status === 'INITIALIZING' ? null : { channel: row.channel as 'SMS' },
    resource_id: `act_${row.id.replace(/-/g, '')}`,
    rejected_at: iso(row.rejected_at),
  };
}
export const ACTIVATION_DATES = ['created_at', 'otp_confirmed_at', 'completed_at', 'rejected_at'] as const;

export interface PhoneChangeFields<S extends string = string> {
  id: string;
  status: S;
  authorization_channel: 'OLD_MOBILE' | 'EMAIL';
  rejection_reason: string | null;
  created_at: Date;
  authorized_at: Date | null;
  completed_at: Date | null;
  rejected_at: Date | null;
}

/** A mobile-number change; its links are absolute under the service's public base URL. */
export function phoneChangeView<S extends string>(baseUrl: string | undefined, row: PhoneChangeFields<S>) {
  return {
    id: row.id,
    url: phoneChangeUrl(baseUrl, row.id),
    status: row.status,
    authorization_channel: row.authorization_channel,
    created_at: iso(row.created_at)!,
    authorized_at: iso(row.authorized_at),
    completed_at: iso(row.completed_at),
    authorize_url: phoneAuthorizeUrl(baseUrl, row.id),
    confirm_url: phoneConfirmUrl(baseUrl, row.id),
    resource_id: `mnc_${row.id.replace(/-/g, '')}`,
    rejection_reason: row.rejection_reason,
    rejected_at: iso(row.rejected_at),
  };
}
export const PHONE_CHANGE_DATES = ['created_at', 'authorized_at', 'completed_at', 'rejected_at'] as const;

import { createHash, randomInt } from 'node:crypto';
import { z } from 'zod';
import { isKenyanMobile } from '../../domain/identifiers';
import {
  type BankIdType,
  ID_TYPES_WITH_BACK,
  type MobileNumberChangeResource,
  type OnboardingBody,
  type OnboardingResource,
  REFUSALS,
  type RefusalCode,
} from '../../providers/bank/protocol';

/** The bank simulator's options, modes, request schemas, records and their resources (the server is index.ts). */
export interface BankSimulatorOptions {
  clientId: string;
  clientSecret: string;
  port?: number;
  /** Lifetime of issued tokens; 3600 by default. */
  tokenTtlSeconds?: number;
}

export const Decision = z.enum(['approve', 'pending', 'reject', 'error', 'timeout', 'throttle']);
export const Mode = z.strictObject({
  onboarding: Decision.optional(),
  mobileChange: Decision.optional(),
  decisionDelayMs: z.number().int().min(0).max(600_000).optional(),
  pendingDecision: z.enum(['approve', 'reject']).optional(),
  onboardingRejection: z.enum(Object.keys(REFUSALS) as [RefusalCode, ...RefusalCode[]]).optional(),
});
export type BankSimulatorMode = Required<z.output<typeof Mode>>;
export const DEFAULT_MODE: BankSimulatorMode = {
  onboarding: 'approve',
  mobileChange: 'approve',
  decisionDelayMs: 100,
  pendingDecision: 'approve',
  onboardingRejection: 'ID_MISMATCH',
};

export const REASONS: Record<RefusalCode, string> = {
  DUPLICATE_CUSTOMER: 'A customer with this identity document already exists',
  NUMBER_TAKEN: 'The mobile number is registered to another customer',
  ID_MISMATCH: 'The details do not match the national registry for this document',
  INVALID_DOCUMENT: 'The document images could not be verified',
  UNDERAGE: 'The customer must be at least 18 years old',
};

// ---------------------------------------------------------------------------------------------
// The request schemas

export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
export const JPEG = Buffer.from([0xff, 0xd8, 0xff]);
export const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The image's type by its magic bytes, or why it is not one. */
export function imageOf(data: string): { contentType: string; bytes: Buffer } | string {
  if (data.length === 0 || !BASE64.test(data)) return 'must be raw base64 (no data: prefix, no line breaks)';
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length > MAX_IMAGE_BYTES) return 'must be at most 5 MiB';
  if (bytes.subarray(0, JPEG.length).equals(JPEG)) return { contentType: 'image/jpeg', bytes };
  if (bytes.subarray(0, PNG.length).equals(PNG)) return { contentType: 'image/png', bytes };
  return 'must be a JPEG or PNG image';
}
export const image = z.string().superRefine((data, ctx) => {
  const found = imageOf(data);
  if (typeof found === 'string') ctx.addIssue({ code: 'custom', message: found });
});

/** A real calendar day, in the past, not before 1900. */
export const pastDay = z.string().refine((day) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return false;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return date.toISOString().slice(0, 10) === day && Number(m[1]) >= 1900 && date.getTime() <= Date.now();
}, 'must be a real past date, YYYY-MM-DD');

export const name = z.string().regex(/^\p{L}[\p{L}' .-]{0,49}$/u, 'must be 1 to 50 letters');
export const reference = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, - or _');
export const mobile = z.string().refine(isKenyanMobile, 'must be +2547XXXXXXXX or +2541XXXXXXXX');
export const ID_NUMBER: Record<BankIdType, RegExp> = {
  '101': /^\d{7,9}$/,
  '102': /^\d{6,9}$/,
  '103': /^[A-Z0-9]{6,12}$/,
};

export const OnboardingSchema = z
  .strictObject({
    partnerReference: reference,
    customer: z.strictObject({
      firstName: name,
      middleName: name.optional(),
      lastName: name,
      dateOfBirth: pastDay,
      idType: z.enum(['101', '102', '103']),
      idNumber: z.string(),
      mobileNumber: mobile,
      email: z.email().max(254).optional(),
    }),
    documents: z.strictObject({ frontSidePhoto: image, backSidePhoto: image.optional(), selfiePhoto: image }),
  })
  .superRefine(({ customer, documents }, ctx) => {
    if (!ID_NUMBER[customer.idType].test(customer.idNumber))
      ctx.addIssue({ code: 'custom', path: ['customer', 'idNumber'], message: 'does not fit the document type' });
    if (ID_TYPES_WITH_BACK.includes(customer.idType) && documents.backSidePhoto === undefined)
      ctx.addIssue({ code: 'custom', path: ['documents', 'backSidePhoto'], message: 'required for this document' });
  });
export const ChangeSchema = z.strictObject({ partnerReference: reference, newMobileNumber: mobile });

// ---------------------------------------------------------------------------------------------
// What the bank holds

export interface SimulatedImage {
  contentType: string;
  bytes: number;
  sha256: string;
}

/** One onboarding the bank recorded, as the control API lists it (images summarized). */
export interface SimulatedCustomer extends OnboardingResource {
  customer: OnboardingBody['customer'];
  documents: Partial<Record<keyof OnboardingBody['documents'], SimulatedImage>>;
}

export interface SimulatedMobileNumberChange extends MobileNumberChangeResource {
  newMobileNumber: string;
}

export interface Stored {
  fingerprint: string;
  status: number;
  body: unknown;
}

export interface RunningBankSimulator {
  url: string;
  customers(): SimulatedCustomer[];
  close(): Promise<void>;
}

/** A record as the API answers it: without the customer's details, images or the new number. */
export const onboardingResource = ({
  customer: _c,
  documents: _d,
  ...onboarding
}: SimulatedCustomer): OnboardingResource => onboarding;
export const changeResource = ({ newMobileNumber: _n, ...change }: SimulatedMobileNumberChange) => change;

export const now = () => new Date().toISOString();
export const digits = (n: number) => Array.from({ length: n }, () => randomInt(10)).join('');
export const summary = (data: string): SimulatedImage => {
  const found = imageOf(data) as { contentType: string; bytes: Buffer };
  return {
    contentType: found.contentType,
    bytes: found.bytes.length,
    sha256: createHash('sha256').update(found.bytes).digest('hex'),
  };
};
/** JSON with sorted keys: the same payload fingerprints the same whatever its key order. */
export const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(',')}]`
    : value && typeof value === 'object'
      ? `{${Object.keys(value)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(value);

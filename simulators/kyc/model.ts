import { randomBytes } from 'node:crypto';
import type { ChaosSettings } from '../chaos';

/**
 * The identity-verification simulator's model: outcomes, jobs, fault modes. Outcome by the last
 * digit of the ID number (or a per-user override set through the control API): 1 no match
 * (1022), 2 not found (1023), 3 possible spoof (0907), 4 human review then approved, 5 human
 * review then rejected, 9 error (2213), anything else approved (0810).
 */
export type Outcome = 'approve' | 'reject' | 'not_found' | 'spoof' | 'review_approve' | 'review_reject' | 'error';
export type CallbackMode = 'normal' | 'lose' | 'duplicate' | 'forge' | 'stale';

interface Result {
  code: string;
  text: string;
  /** The v3 status of this result. */
  status: 'clear' | 'block' | 'error';
  provisional?: { code: string; text: string };
}

const REVIEW = { code: '0814', text: 'Provisional Approval - Under Human Review' };
export const RESULTS: Record<Outcome, Result> = {
  approve: { code: '0810', text: 'Document Verified', status: 'clear' },
  reject: { code: '1022', text: 'No Match', status: 'block' },
  not_found: { code: '1023', text: 'ID Number Not Found', status: 'block' },
  spoof: { code: '0907', text: 'Possible Spoof', status: 'block' },
  review_approve: { code: '0810', text: 'Document Verified', status: 'clear', provisional: REVIEW },
  review_reject: { code: '1022', text: 'No Match', status: 'block', provisional: REVIEW },
  error: { code: '2213', text: 'Missing Parameter', status: 'error' },
};
const BY_LAST_DIGIT: Record<string, Outcome> = {
  '1': 'reject',
  '2': 'not_found',
  '3': 'spoof',
  '4': 'review_approve',
  '5': 'review_reject',
  '9': 'error',
};

export interface SimulatedJob {
  smileJobId: string;
  v3JobId: string;
  apiVersion: 'v2' | 'v3';
  jobId: string;
  userId: string;
  jobType: number;
  /** Every partner_params key the job was created with, values as strings (echoed back). */
  partnerParams: Record<string, string>;
  callbackUrl: string;
  outcome: Outcome;
  /** awaiting_upload: v2 prepared, zip not yet uploaded (the job does not exist for the provider yet). */
  state: 'awaiting_upload' | 'processing' | 'provisional' | 'final';
  resultCode?: string;
  resultText?: string;
  held: boolean;
  createdAt: string;
  completedAt?: string;
  received: {
    country?: string;
    idType?: string;
    idNumber?: string;
    consent?: boolean;
    selfie: boolean;
    documentFront: boolean;
    documentBack: boolean;
    livenessImages: number;
    /** How the images came (v2 zips hold files, base64, or both). */
    imageForms?: ('file' | 'base64')[];
    userDetails?: Record<string, unknown>;
  };
  callbacksSent: number;
}

export interface KycSimulatorOptions {
  partnerId: string;
  apiKey: string;
  port?: number;
  /** The TLS listener's port (0 or absent: a free one). */
  tlsPort?: number;
  /** Time from submission to a result, and from a provisional to the final result. */
  processingMs?: number;
  reviewMs?: number;
  /** Time from a result to its callback. */
  callbackDelayMs?: number;
  /**
   * The partner's callback allow-list (URL prefixes) for v3. The provider takes only https
   * callback URLs on it; a prefix listed here is taken even over http, so a development service
   * without TLS can be called back. Absent: any https URL.
   */
  callbackAllowList?: string[];
  /** The partner's default v3 callback URL, used when a request names none. */
  defaultCallbackUrl?: string;
}

export interface Control {
  callbacks: CallbackMode;
  callbackDelayMs: number;
  processingMs: number;
  reviewMs: number;
  holdJobs: boolean;
  /** HTTP status every API endpoint answers with (0: behave normally). */
  failWith: number;
  /** Sign v2 job_status answers with a wrong key (a tampered or spoofed answer). */
  forgeStatusSignature: boolean;
  outcomes: Record<string, Outcome>;
  /** Seeded callback chaos (copies, shuffling, late, forged per callback); it overrides `callbacks`. null: off. */
  chaos: ChaosSettings | null;
}

export const outcomeFor = (control: Control, userId: string, idNumber: string | undefined): Outcome =>
  control.outcomes[userId] ?? BY_LAST_DIGIT[(idNumber ?? '').slice(-1)] ?? 'approve';

export const tenDigits = () => String(1_000_000_000 + Math.floor(Math.random() * 8_999_999_999));

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
/** A TypeID suffix: 128 random bits in 26 lower-case Crockford base32 characters (the first 0 to 7). */
export function typeIdSuffix(): string {
  let value = BigInt(`0x${randomBytes(16).toString('hex')}`);
  let text = '';
  for (let i = 0; i < 26; i++) {
    text = CROCKFORD[Number(value & 31n)]! + text;
    value >>= 5n;
  }
  return text;
}
export const V3_JOB_ID = /^job_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/** The v3 status a job shows now (processing until its first result). */
export function v3Status(job: SimulatedJob): 'processing' | 'attention' | 'clear' | 'block' | 'error' {
  if (job.state === 'processing' || job.state === 'awaiting_upload') return 'processing';
  if (job.state === 'provisional') return 'attention';
  return RESULTS[job.outcome].status;
}

/** Sets a key in a map bounded to `max` entries, the oldest forgotten first. */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, max = 10_000): void {
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value!);
}

import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { Failure } from '../../domain/failures';
import type { SweepCounts, SweepResult } from '../../domain/kyc/expiry-sweep';
import type { ResultCategory } from '../../domain/kyc/result-codes';

/**
 * Messages of the kyc-verification workflow, importable by the API without the workflow body.
 */
export interface KycVerificationInput {
  organizationId: string;
  applicationId: string;
  channel: 'server_upload' | 'provider_sdk';
  /** How long to wait for a callback before asking the provider (and between asks). */
  callbackWaitMs: number;
}

/**
 * A provider callback as the callback route hands it over: a trigger to ask the provider (a
 * signed lookup) now. Nothing it says is recorded as it is: not its verdict, not a review flag.
 */
export interface ProviderEvent {
  eventId: string;
  /**
   * Only from a v3 callback: the job to look up when none is known. Not covered by the
   * signature, so it is believed only when the lookup's answer names the application's user.
   */
  providerJobId?: string;
  /**
   * Always true. Runs started before callbacks became triggers flag a provisional event for
   * review without a lookup and look up on a final one: sent final, they look up.
   */
  isFinal: true;
}

export interface SdkSession {
  token: string;
  apiVersion: string;
}

export const providerCallbackSignal = defineSignal<[ProviderEvent]>('providerCallback');
/** Mints (once) the provider SDK session; run through Update-with-Start by the POST. */
export const sdkSessionUpdate = defineUpdate<SdkSession>('sdkSession');
/** Records the provider's job id reported by the client: write-once, only while pending. */
export const reportProviderJobIdUpdate = defineUpdate<{ providerJobId: string }, [string]>('reportProviderJobId');
/** Asks the provider now (GET status on stale state); answers once the answer is applied. */
export const refreshStatusUpdate = defineUpdate<{ state: string }>('refreshStatus');
/** The expiry sweep settled the application (completed or EXPIRED): the run ends. */
export const verificationClosedSignal = defineSignal('verificationClosed');
export const verificationStateQuery = defineQuery<{ providerJobId?: string; completed: boolean; eventsSeen: number }>(
  'verificationState',
);

/** The Update refusals of reporting a provider job id (the API maps them to 409). */
export const KycUpdateError = { DIFFERENT_JOB_ID: Failure.DIFFERENT_JOB_ID, NOT_PENDING: Failure.NOT_PENDING } as const;

/** Which application an activity works on; images and job ids are read from Postgres by reference. */
export interface ApplicationRef {
  organizationId: string;
  applicationId: string;
}

/** Where the provider stands on an application's job, as a lookup found it. */
export interface ProviderStatus {
  /** `closed`: the application is no longer pending here (the expiry sweep settled it); the provider was not asked. */
  state: 'processing' | 'not_found' | 'final' | 'closed';
  category?: ResultCategory;
  resultCode?: string;
  resultText?: string;
  isFinal?: boolean;
  /** The provider's job id, when the lookup found the job. */
  providerJobId?: string;
}

// The sweep's outcome is also what the database keeps and the API answers, so it is defined in
// domain/, where db/ may import it; it stays importable here with the workflow's other messages.
export type { SweepResult } from '../../domain/kyc/expiry-sweep';

/** Whether an organization's sweep window is due (its lease taken), or its last result. */
export type SweepStart = { due: true; startedAt: string; cutoff: string } | { due: false; last: SweepResult | null };

/** Where a sweep that continued as new picks up: its window, the last application swept, the counts so far. */
export interface SweepProgress {
  startedAt: string;
  cutoff: string;
  afterId: string | null;
  counts: SweepCounts;
}

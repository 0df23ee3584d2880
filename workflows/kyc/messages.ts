import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

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
  /** Only from a v3 callback, whose signature covers its body: the job to look up when none is known. */
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
export const verificationStateQuery = defineQuery<{ providerJobId?: string; completed: boolean; eventsSeen: number }>('verificationState');

export const KycUpdateError = {
  DIFFERENT_JOB_ID: 'DIFFERENT_JOB_ID',
  NOT_PENDING: 'NOT_PENDING',
} as const;

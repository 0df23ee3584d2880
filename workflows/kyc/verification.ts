import {
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { KycActivities } from '../../activities';
import { Failure } from '../../domain/failures';
import {
  type KycVerificationInput,
  type ProviderStatus,
  KycUpdateError,
  type ProviderEvent,
  providerCallbackSignal,
  refreshStatusUpdate,
  reportProviderJobIdUpdate,
  type SdkSession,
  sdkSessionUpdate,
  verificationClosedSignal,
  verificationStateQuery,
} from './messages';

const activities = proxyActivities<KycActivities>({
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [Failure.SUBMISSION_INDETERMINATE, Failure.PROVIDER_REJECTED_REQUEST],
  },
});

/** Changes made while runs may be in flight; each branch keeps older histories replaying. */
const PATCHES = {
  /** Every callback is a trigger for one signed lookup; none is taken as a review flag or a job id by itself. */
  callbacksAreTriggers: 'kyc-callbacks-are-triggers',
} as const;

/** Each ask of the provider is one loop; a long wait continues as new to keep history small. */
const LOOPS_BEFORE_CONTINUE_AS_NEW = 200;

/**
 * One verification of a KYC application: submit (server_upload) or mint the SDK session
 * (provider_sdk), then wait for the provider's verdict. Callbacks are only triggers: every one
 * makes the run ask the provider (a signed lookup), and only the lookup's answer is recorded
 * (verdict, review flag, provider job id); duplicates (same event id) change nothing. With no
 * callback in callbackWaitMs, the provider is asked.
 */
export async function kycVerification(
  input: KycVerificationInput,
  carried?: { providerJobId?: string; session?: SdkSession },
): Promise<string> {
  const ref = { organizationId: input.organizationId, applicationId: input.applicationId };
  let providerJobId = carried?.providerJobId;
  let session = carried?.session;
  let completed = false;
  let completedStatus: string | undefined;
  const seen = new Set<string>();
  const pending: ProviderEvent[] = [];
  let refreshRequested = false;
  let lastLookup: ProviderStatus | undefined;

  setHandler(providerCallbackSignal, (event) => {
    if (seen.has(event.eventId)) return; // a duplicate delivery
    seen.add(event.eventId);
    pending.push(event);
  });
  setHandler(verificationStateQuery, () => ({ providerJobId, completed, eventsSeen: seen.size }));
  setHandler(verificationClosedSignal, () => {
    completed = true;
  });

  let minting: Promise<SdkSession> | undefined;
  setHandler(sdkSessionUpdate, async () => {
    // Minted once per run: a retried POST gets the same session.
    minting ??= activities.createSdkSession(ref);
    session ??= await minting;
    return session;
  });

  setHandler(
    reportProviderJobIdUpdate,
    async (reported) => {
      if (providerJobId === undefined) {
        providerJobId = reported;
        await activities.recordProviderJobId({ ...ref, providerJobId: reported });
      }
      return { providerJobId: providerJobId! };
    },
    {
      validator: (reported) => {
        if (completed)
          throw ApplicationFailure.nonRetryable('the verification is no longer pending', KycUpdateError.NOT_PENDING);
        if (providerJobId !== undefined && providerJobId !== reported) {
          throw ApplicationFailure.nonRetryable(
            'a different provider job id is already recorded',
            KycUpdateError.DIFFERENT_JOB_ID,
          );
        }
      },
    },
  );

  setHandler(refreshStatusUpdate, async () => {
    refreshRequested = true;
    const before = lastLookup;
    await condition(() => completed || lastLookup !== before);
    return { state: completed ? 'completed' : (lastLookup?.state ?? 'unknown') };
  });

  async function complete(status: ProviderStatus) {
    const verdict = { resultCode: status.resultCode!, resultText: status.resultText ?? '', category: status.category };
    completedStatus = (await activities.completeVerification({ ...ref, ...verdict })).status;
    completed = true;
  }

  /** Applies what the provider says now: final → complete; provisional → under review. */
  async function ask(providerJobIdHint?: string): Promise<void> {
    const status = providerJobIdHint
      ? await activities.checkProviderStatus(ref, providerJobIdHint)
      : await activities.checkProviderStatus(ref);
    // A job id is known here only once a lookup found the job (the write-once report relies on it).
    if (status.providerJobId) providerJobId ??= status.providerJobId;
    // Settled elsewhere (the expiry sweep): nothing left to wait for.
    if (status.state === 'closed') completed = true;
    if (status.state === 'final') {
      if (status.category === 'PROVISIONAL' || status.isFinal === false) await activities.recordReview(ref);
      else await complete(status);
    }
    lastLookup = status; // only once applied: a refresh waiting on it then reads the outcome
  }

  if (input.channel === 'server_upload' && !providerJobId) {
    try {
      providerJobId = (await activities.submitDocumentVerification(ref)).providerJobId ?? undefined;
    } catch (error) {
      await activities.failSubmission({ ...ref, reason: 'The provider could not take the submission' });
      throw error;
    }
  }

  for (let loop = 0; loop < LOOPS_BEFORE_CONTINUE_AS_NEW && !completed; loop++) {
    const woke = await condition(() => pending.length > 0 || refreshRequested, input.callbackWaitMs);
    refreshRequested = false;
    const events = pending.splice(0);
    if (!woke || events.length === 0) {
      await ask(); // no callback in time, or a status read found the state stale
      continue;
    }
    if (patched(PATCHES.callbacksAreTriggers)) {
      // One signed lookup however many callbacks came together; only what it says is recorded.
      await ask(events.find((event) => event.providerJobId)?.providerJobId);
      continue;
    }
    for (const event of events) {
      if (completed) break;
      if (event.providerJobId && !providerJobId) providerJobId = event.providerJobId;
      if (!event.isFinal) {
        await activities.recordReview(ref);
        continue;
      }
      // The callback's signature does not cover its body: only a signed lookup decides.
      await ask();
    }
  }
  if (!completed) await continueAsNew<typeof kycVerification>(input, { providerJobId, session });
  return completedStatus ?? 'CLOSED_BY_SWEEP';
}

import { randomUUID } from 'node:crypto';
import { callbackChaos } from '../chaos';
import type { SimulatorTimers } from '../server';
import { ASSUMED } from '../../providers/kyc/assumed';
import { signV2 } from '../../providers/kyc/signature';
import { kycForgeries, type SignedCallback } from './forgeries';
import {
  type CallbackMode,
  type Control,
  type Outcome,
  outcomeFor,
  RESULTS,
  type SimulatedJob,
  tenDigits,
  typeIdSuffix,
  v3Status,
} from './model';

/**
 * The simulator's jobs: where they are kept (by the provider's v2 and v3 ids and by our job
 * id), how they move (processing → (provisional →) final), and the signed callback each result
 * sends as the callback mode says (or as chaos mode plans each, ../../simulator-chaos.ts).
 */
const MAX_JOBS = 250_000;

/** A v2 job's result, as job_status and its callback report it. */
const v2Result = (job: SimulatedJob) => ({
  ResultCode: job.resultCode,
  ResultText: job.resultText,
  ResultType: 'ID Verification',
  SmileJobID: job.smileJobId,
  PartnerParams: job.partnerParams,
  Actions: {
    Document_Check: job.resultCode === '0810' ? 'Passed' : 'Failed',
    Human_Review_Compare: job.state === 'provisional' ? 'Under Review' : 'Passed',
    Liveness_Check: job.received.livenessImages > 0 ? 'Passed' : 'Not Applicable',
    Verify_Document: job.resultCode === '0810' ? 'Passed' : 'Failed',
  },
  IsFinalResult: String(job.state === 'final'),
  ConfidenceValue: job.resultCode === '0810' ? '99' : '0',
  IDType: job.received.idType ?? '',
  IDNumber: job.received.idNumber ?? '',
  FullName: '',
  DOB: '',
  Gender: '',
  Country: job.received.country ?? '',
});

/** The callback's body and headers, signed with `key` at `at` for the partner. */
function signedCallback(partnerId: string, job: SimulatedJob, at: Date, key: string): SignedCallback {
  const timestamp = at.toISOString();
  const signature = signV2(key, partnerId, timestamp);
  if (job.apiVersion === 'v3') {
    // v3 callbacks keep every partner_params key but these three.
    const { job_id: _job, user_id: _user, job_type: _type, ...params } = job.partnerParams;
    const names = ASSUMED.v3CallbackHeaders;
    return {
      headers: {
        [names.signature]: signature,
        [names.timestamp]: timestamp,
        [names.jobId]: job.v3JobId,
        [names.userId]: job.userId,
      },
      body: {
        status: v3Status(job),
        message: job.resultText,
        reason: job.resultCode,
        created_at: job.createdAt,
        completed_at: job.completedAt ?? timestamp,
        product: ASSUMED.v3CallbackProduct,
        partner_params: params,
      },
    };
  }
  return { headers: {}, body: { ...v2Result(job), timestamp, signature } };
}

/** Posts a callback to the job's URL; answers the receiver's HTTP status (an unreachable one throws). */
async function post(job: SimulatedJob, sent: SignedCallback): Promise<number> {
  const response = await fetch(job.callbackUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...sent.headers },
    body: JSON.stringify(sent.body),
    signal: AbortSignal.timeout(5_000),
  });
  await response.body?.cancel();
  return response.status;
}

export function createJobStore(options: { partnerId: string; apiKey: string; timers: SimulatorTimers }) {
  const { partnerId, apiKey, timers } = options;
  const jobs = new Map<string, SimulatedJob>();
  const byJobId = new Map<string, SimulatedJob>();
  const byV3Id = new Map<string, SimulatedJob>();
  const chaos = callbackChaos(timers);
  let control: Control;
  const callback = (job: SimulatedJob, at: Date, key: string) => signedCallback(partnerId, job, at, key);
  function forget(job: SimulatedJob) {
    jobs.delete(job.smileJobId);
    if (byJobId.get(job.jobId) === job) byJobId.delete(job.jobId);
    byV3Id.delete(job.v3JobId);
  }

  /** Sends the job's current result to its callback URL as the mode says. */
  async function sendCallback(job: SimulatedJob, mode: CallbackMode = control.callbacks): Promise<void> {
    if (mode === 'lose' || !job.callbackUrl) return;
    const at = mode === 'stale' ? new Date(Date.now() - 60 * 60_000) : new Date();
    const sent = callback(job, at, mode === 'forge' ? 'wrong-key' : apiKey);
    for (let i = 0; i < (mode === 'duplicate' ? 2 : 1); i++) {
      job.callbacksSent += 1;
      await post(job, sent).catch(() => {});
    }
  }

  /** A result's callback, now due: as chaos mode plans it when set, else as the callback mode says. */
  function dispatch(job: SimulatedJob) {
    if (!control.chaos || !job.callbackUrl) return sendCallback(job);
    // The callback reports the job as it is now, though a copy may be sent later (signed then).
    const due: SimulatedJob = { ...job };
    return chaos.deliver({
      kind: `kyc_${job.apiVersion}_${job.state === 'provisional' ? 'provisional' : 'final'}`,
      // Our job id (partner_params.job_id): the one request id both API generations carry.
      request: job.jobId,
      send: () => {
        job.callbacksSent += 1;
        return post(job, callback(due, new Date(), apiKey));
      },
      forgeries: kycForgeries(due, {
        sign: callback,
        apiKey,
        post,
        otherUsersJob: () => [...byV3Id.values()].find((other) => other.userId !== job.userId),
      }),
    });
  }

  function complete(job: SimulatedJob) {
    const result = RESULTS[job.outcome];
    if (result.provisional && job.state === 'processing') {
      job.state = 'provisional';
      job.resultCode = result.provisional.code;
      job.resultText = result.provisional.text;
      timers.later(control.callbackDelayMs, () => dispatch(job));
      timers.later(control.reviewMs, () => complete(job));
      return;
    }
    job.state = 'final';
    job.resultCode = result.code;
    job.resultText = result.text;
    job.completedAt = new Date().toISOString();
    timers.later(control.callbackDelayMs, () => dispatch(job));
  }

  return {
    setControl(next: Control) {
      control = next;
    },
    all: () => [...jobs.values()],
    /** A job by our job id (v2 lookups, reuse checks). */
    byJobId: (jobId: unknown) => byJobId.get(String(jobId)),
    byV3Id: (id: string) => byV3Id.get(id),
    /** A job by either provider id (the control API takes both). */
    byProviderId: (id: string) => jobs.get(id) ?? byV3Id.get(id),

    create(
      apiVersion: 'v2' | 'v3',
      params: Record<string, unknown>,
      callbackUrl: string,
      userId = String(params.user_id ?? ''),
    ): SimulatedJob {
      const job: SimulatedJob = {
        smileJobId: tenDigits(),
        v3JobId: `job_${typeIdSuffix()}`,
        apiVersion,
        jobId: String(params.job_id ?? randomUUID()),
        userId,
        jobType: Number(params.job_type ?? 11),
        partnerParams: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
        callbackUrl,
        outcome: 'approve',
        state: 'awaiting_upload',
        held: control.holdJobs,
        createdAt: new Date().toISOString(),
        received: { selfie: false, documentFront: false, documentBack: false, livenessImages: 0 },
        callbacksSent: 0,
      };
      jobs.set(job.smileJobId, job);
      byJobId.set(job.jobId, job);
      byV3Id.set(job.v3JobId, job);
      // Bounded memory: the oldest jobs are forgotten first (benchmarks make a few hundred thousand).
      if (jobs.size > MAX_JOBS) forget(jobs.values().next().value!);
      return job;
    },

    forget,

    clear() {
      jobs.clear();
      byJobId.clear();
      byV3Id.clear();
      chaos.configure(null);
    },

    chaos,
    /** A status lookup about the job was answered: under chaos, callbacks held until then go now. */
    queried(job: SimulatedJob) {
      if (job.state !== 'processing' && job.state !== 'awaiting_upload') chaos.queried(job.jobId);
    },

    /** The submission is in: the outcome is decided (unless given) and processing starts (unless jobs are held). */
    start(job: SimulatedJob, outcome?: Outcome) {
      job.outcome = outcome ?? outcomeFor(control, job.userId, job.received.idNumber);
      job.state = 'processing';
      if (!job.held) timers.later(control.processingMs, () => complete(job));
    },

    release(job: SimulatedJob) {
      job.held = false;
      if (job.state === 'processing') timers.later(0, () => complete(job));
    },

    /** As if processed long ago: the outcome's final result, no callback. */
    settle(job: SimulatedJob) {
      job.state = 'final';
      job.resultCode = RESULTS[job.outcome].code;
      job.resultText = RESULTS[job.outcome].text;
      job.completedAt = new Date().toISOString();
    },

    v2Result,
    sendCallback,
  };
}

export type JobStore = ReturnType<typeof createJobStore>;

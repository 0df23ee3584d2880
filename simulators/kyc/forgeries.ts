import { randomUUID } from 'node:crypto';
import { ASSUMED } from '../../providers/kyc/assumed';
import { type SimulatedJob, typeIdSuffix } from './model';

/** A callback as sent: its headers (v3 carries the signature there) and body. */
export interface SignedCallback {
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * What an attacker can send in this protocol, for chaos mode. A callback's signature covers only
 * its timestamp and the partner id, so: without the API key, a wrong signature or one that is no
 * longer fresh (`wrong_signature`, `stale_signature`); with any recent genuine pair replayed, any
 * body at all: the opposite verdict for this job (`forged_verdict`), a job that is none of ours
 * (`unknown_job`), and on v3 this callback naming another user's job in its job header
 * (`other_users_job`, when the simulator holds one). The receiver must treat each as a trigger
 * for a signed lookup at most.
 */
export function kycForgeries(
  job: SimulatedJob,
  deps: {
    /** The job's callback signed at `at` with `key`. */
    sign(job: SimulatedJob, at: Date, key: string): SignedCallback;
    apiKey: string;
    post(job: SimulatedJob, callback: SignedCallback): Promise<number>;
    /** A v3 job of another user, if any. */
    otherUsersJob(): SimulatedJob | undefined;
  },
): Record<string, () => Promise<number>> {
  const { sign, apiKey, post } = deps;
  const signed = () => sign(job, new Date(), apiKey);
  const send = (callback: () => SignedCallback) => () => post(job, callback());
  const v3 = job.apiVersion === 'v3';
  const approved = job.resultCode === '0810';
  const other = v3 ? deps.otherUsersJob() : undefined;
  return {
    wrong_signature: send(() => sign(job, new Date(), `${apiKey}-not`)),
    stale_signature: send(() => sign(job, new Date(Date.now() - 60 * 60_000), apiKey)),
    forged_verdict: send(() => {
      const { headers, body } = signed();
      if (v3) return { headers, body: { ...body, status: approved ? 'block' : 'clear' } };
      const verdict = approved ? { ResultCode: '1022', ResultText: 'No Match' } : { ResultCode: '0810' };
      return {
        headers,
        body: { ...body, ResultText: 'Document Verified', ...verdict, IsFinalResult: 'true' },
      };
    }),
    unknown_job: send(() => {
      const { headers, body } = signed();
      const params = { ...(body[v3 ? 'partner_params' : 'PartnerParams'] as Record<string, string>) };
      if (!v3) return { headers, body: { ...body, PartnerParams: { ...params, job_id: randomUUID() } } };
      return {
        headers: { ...headers, [ASSUMED.v3CallbackHeaders.jobId]: `job_${typeIdSuffix()}` },
        body: { ...body, partner_params: { ...params, [ASSUMED.v3JobReferenceParam]: randomUUID() } },
      };
    }),
    ...(other && {
      other_users_job: send(() => {
        const { headers, body } = signed();
        return { headers: { ...headers, [ASSUMED.v3CallbackHeaders.jobId]: other.v3JobId }, body };
      }),
    }),
  };
}

import type { Context } from 'koa';
import { z } from 'zod';
import { ChaosSettings } from '../chaos';
import { controlRouter, type SimulatorTimers } from '../server';
import type { JobStore } from './jobs';
import type { CallbackMode, Control, Outcome, SimulatedJob } from './model';

/**
 * The control API tests drive the simulator with (/_control): reset, fault modes (chaos mode's
 * record at GET /chaos), per-user outcomes, what a client SDK does with its session token, jobs
 * in bulk, releasing held jobs, sending a job's callback in a given mode, forgetting a job, and
 * the TLS certificate.
 */
export function controlRoutes(deps: {
  jobs: JobStore;
  timers: SimulatorTimers;
  sessions: Map<string, SimulatedJob>;
  control: () => Control;
  setControl: (next: Control) => void;
  reset: () => void;
  revokeTokens: () => void;
  certificate: string;
}) {
  const { jobs, timers, sessions } = deps;
  const controlApi = controlRouter();
  const notFound = (ctx: Context) => {
    ctx.status = 404;
    ctx.body = { error: 'Job not found' };
  };

  controlApi.post('/reset', (ctx) => {
    deps.reset();
    ctx.status = 204;
  });
  controlApi.patch('/', (ctx) => {
    const patch = { ...(ctx.request.body as Partial<Control>) };
    if (patch.chaos) {
      const chaos = ChaosSettings.safeParse(patch.chaos);
      if (!chaos.success) {
        ctx.status = 400;
        ctx.body = { error: z.prettifyError(chaos.error) };
        return;
      }
      patch.chaos = chaos.data;
    }
    deps.setControl({ ...deps.control(), ...patch });
    // Chaos settings given (again) start a new plan and record; null turns it off.
    if (patch.chaos !== undefined) jobs.chaos.configure(patch.chaos);
    ctx.body = deps.control();
  });
  /** Chaos mode: per callback, its plan (copies, timing, forgery) and what the receiver answered. */
  controlApi.get('/chaos', (ctx) => {
    ctx.body = jobs.chaos.records();
  });
  controlApi.put('/outcomes/:userId', (ctx) => {
    deps.control().outcomes[ctx.params.userId!] = (ctx.request.body as { outcome: Outcome }).outcome;
    ctx.status = 204;
  });
  /** Every v3 token issued so far stops working (a key rotation at the provider). */
  controlApi.post('/revoke-tokens', (ctx) => {
    deps.revokeTokens();
    ctx.status = 204;
  });
  controlApi.get('/certificate', (ctx) => {
    ctx.type = 'application/x-pem-file';
    ctx.body = deps.certificate;
  });
  /** What a client SDK does with a session token: submits, and learns the provider's job id. */
  controlApi.post('/sdk/submit', (ctx) => {
    const {
      token,
      id_number: idNumber,
      liveness_images: liveness = 0,
    } = ctx.request.body as { token: string; id_number?: string; liveness_images?: number };
    const job = sessions.get(token);
    if (!job || job.state !== 'awaiting_upload') {
      ctx.status = 401;
      ctx.body = { error: 'Invalid or used session token' };
      return;
    }
    sessions.delete(token);
    job.received = {
      idNumber,
      selfie: true,
      documentFront: true,
      documentBack: false,
      livenessImages: liveness,
      consent: true,
    };
    jobs.start(job);
    ctx.body = { smile_job_id: job.smileJobId, job_id: job.apiVersion === 'v3' ? job.v3JobId : job.jobId };
  });
  /**
   * Jobs as if submitted earlier, in bulk and without callbacks (benchmarks build large
   * populations this way): `processing` ones stay so until released; `final` ones carry their
   * outcome's result.
   */
  controlApi.post('/jobs', (ctx) => {
    const { jobs: wanted } = ctx.request.body as {
      jobs: {
        job_id: string;
        user_id: string;
        api_version?: 'v2' | 'v3';
        state: 'processing' | 'final';
        outcome?: Outcome;
      }[];
    };
    const created = wanted.map((w) => {
      const job = jobs.create(w.api_version ?? 'v2', { job_id: w.job_id, user_id: w.user_id, job_type: 11 }, '');
      job.outcome = w.outcome ?? 'approve';
      job.held = true;
      job.state = 'processing';
      if (w.state === 'final') jobs.settle(job);
      return { smile_job_id: job.smileJobId, job_id: job.v3JobId };
    });
    ctx.status = 201;
    ctx.body = { created: created.length, jobs: created };
  });
  controlApi.get('/jobs', (ctx) => {
    ctx.body = jobs.all();
  });
  const controlled = (ctx: Context) => jobs.byProviderId(String(ctx.params.id));
  controlApi.post('/jobs/:id/release', (ctx) => {
    const job = controlled(ctx);
    if (!job) return notFound(ctx);
    jobs.release(job);
    ctx.status = 204;
  });
  controlApi.post('/jobs/:id/callback', async (ctx) => {
    const job = controlled(ctx);
    if (!job) return notFound(ctx);
    const { mode = 'normal', delay_ms: delayMs = 0 } = (ctx.request.body ?? {}) as {
      mode?: CallbackMode;
      delay_ms?: number;
    };
    if (delayMs > 0) timers.later(delayMs, () => jobs.sendCallback(job, mode));
    else await jobs.sendCallback(job, mode);
    ctx.status = 204;
  });
  controlApi.delete('/jobs/:id', (ctx) => {
    const job = controlled(ctx);
    if (job) jobs.forget(job);
    ctx.status = 204;
  });
  return controlApi;
}

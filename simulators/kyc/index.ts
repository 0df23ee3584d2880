import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import { SignJWT } from 'jose';
import { ASSUMED } from '../../providers/kyc/assumed';
import { SimulatorTimers, simulatorCertificate, startSimulatorServer } from '../server';
import { controlRoutes } from './control';
import { createJobStore } from './jobs';
import type { Control, KycSimulatorOptions, SimulatedJob } from './model';
import { startUploadStorage } from './storage';
import { readUpload, v2Routes } from './v2';
import { v3Routes } from './v3';

export type { CallbackMode, KycSimulatorOptions, Outcome, SimulatedJob } from './model';

/**
 * Simulator of the identity-verification provider (protocols/kyc-provider.md), both API
 * generations, for development and tests: the provider's checks, status codes and error bodies;
 * outcomes decided from the input (./model.ts); signed callbacks after a delay; the v2 zip
 * going to a presigned URL on a separate TLS listener (./storage.ts). The API listens on plain
 * HTTP and on TLS (official SDKs force https). A control API under /_control lets tests lose,
 * duplicate, delay or forge callbacks (or deliver each as a seeded chaos plan says: `chaos`),
 * hold jobs, make the API fail, forget jobs, and read what was received.
 */
export interface RunningKycSimulator {
  url: string;
  /** The same API over TLS. */
  tlsUrl: string;
  /** PEM of the TLS certificate (of both listeners): trust it with NODE_EXTRA_CA_CERTS or a CA option. */
  certificate: string;
  jobs(): SimulatedJob[];
  close(): Promise<void>;
}

export async function startKycSimulator(options: KycSimulatorOptions): Promise<RunningKycSimulator> {
  const { partnerId, apiKey } = options;
  const newTokenKey = () => new TextEncoder().encode(randomBytes(32).toString('hex'));
  /** Rotated by the control API: every token issued before is then refused (401). */
  let tokenKey = newTokenKey();
  const timers = new SimulatorTimers();
  const jobs = createJobStore({ partnerId, apiKey, timers });
  const uploads = new Map<string, SimulatedJob>();
  const sessions = new Map<string, SimulatedJob>();
  const defaults = (): Control => ({
    callbacks: 'normal',
    callbackDelayMs: options.callbackDelayMs ?? 50,
    processingMs: options.processingMs ?? 100,
    reviewMs: options.reviewMs ?? 200,
    holdJobs: false,
    failWith: 0,
    forgeStatusSignature: false,
    outcomes: {},
    chaos: null,
  });
  let control = defaults();
  jobs.setControl(control);
  const setControl = (next: Control) => {
    control = next;
    jobs.setControl(next);
  };
  const mintToken = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('simulator')
      .setAudience(partnerId)
      .setIssuedAt()
      .setExpirationTime(`${ASSUMED.v3TokenLifetimeMs / 1000}s`)
      .sign(tokenKey);

  const storage = await startUploadStorage((uploadId, zip) => {
    const job = uploads.get(uploadId);
    if (!job) return;

    uploads.delete(uploadId);
    readUpload(job, zip);
    const complete = job.outcome !== 'error' && job.received.selfie && job.received.documentFront;
    jobs.start(job, complete ? undefined : 'error');
  });

  const certificate = simulatorCertificate().cert;
  const server = await startSimulatorServer({
    port: options.port,
    tls: { port: options.tlsPort },
    timers,
    before: [
      async (ctx, next) => {
        if (control.failWith && !ctx.path.startsWith('/_control')) {
          ctx.status = control.failWith;
          ctx.body = ctx.path.startsWith('/v3/')
            ? { status: STATUS_CODES[control.failWith], message: 'Simulated provider failure' }
            : { error: 'Simulated provider failure', code: '2201' };
          return;
        }
        await next();
      },
    ],
    // v3 routes read their own (multipart) bodies; JSON everywhere else.
    bodyParser: async (ctx, next) =>
      ctx.path.startsWith('/v3/') ? next() : bodyParser({ enableTypes: ['json'], jsonLimit: '20mb' })(ctx, next),
    control: controlRoutes({
      jobs,
      timers,
      sessions,
      control: () => control,
      setControl,
      certificate,
      revokeTokens() {
        tokenKey = newTokenKey();
      },
      reset() {
        timers.clear();
        jobs.clear();
        uploads.clear();
        sessions.clear();
        storage.clear();
        setControl(defaults());
      },
    }),
    api: [
      v2Routes({
        partnerId,
        apiKey,
        jobs,
        control: () => control,
        presign: storage.presign,
        uploads,
        sessions,
        mintToken,
      }),
      v3Routes({ partnerId, apiKey, jobs, tokenKey: () => tokenKey, sessions, mintToken, options }),
    ],
  });
  return {
    url: server.url,
    tlsUrl: server.tlsUrl!,
    certificate,
    jobs: () => jobs.all(),
    async close() {
      await Promise.all([server.close(), storage.close()]);
    },
  };
}

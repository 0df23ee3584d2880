import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { setTimeout as sleep } from 'node:timers/promises';
import { otpDigest } from '../domain/current-account/codes';
import { loadDevConfig } from '../dev/config';
import { DEMO } from '../db/seeds/demo';
import { currentAccountSettings, mobileMoneySettings, startDevelopmentProviders } from '../dev/simulators';
import { requestToken } from '../simulators/identity';
import { workflowIds } from '../workflows/ids';
import { confirmOtpUpdate, selfServiceStateQuery } from '../workflows/current-account/messages';
import { benchDatabase, demoDatabase } from './database';
import { type BenchApplicant, seedApplicants } from './seed';
import { startDeployed } from './deployed';
import { inBatches, line, mapBounded, openLoop, poster } from './lib';
import { pokeUpdate } from './workflows/trivial';

/**
 * OTP confirmation (issue 16), with the service as deployed (API and worker each in its own
 * process, Postgres, a Temporal dev server; the SMS gateway and bank simulators in this process):
 *   - The confirmOtp Update on an activation AWAITING_OTP (its validator, its handler and the
 *     handler's local-activity write), sent with client executeUpdate as the API sends it (the
 *     digest of the code that was texted): p50 and p99 at a fixed 20 confirmations per second,
 *     against the bare Temporal Update in the same run at the same rate (executeUpdate on a
 *     trivial waiting workflow whose handler answers at once, worker in its own process).
 *   - The same end to end over HTTP (POST /v1/user/accounts/current/activation/otp/confirm),
 *     reported beside them.
 * Every activation is started, AWAITING_OTP and its code read before anything is timed; each is
 * confirmed once, and then goes on to the bank's onboarding (the simulator approves). Each
 * applicant is a new user with a number of their own, so the hourly send limits never bite.
 * BENCH_QUICK=1: shorter loops (a smoke run).
 */
const QUICK = Boolean(process.env.BENCH_QUICK);
const RATE = 20;
const SECONDS = QUICK ? 5 : 10;
const WARM_UP = RATE; // one second at the rate, for each of the three
const TIMED = RATE * SECONDS;
/** Warm-up and timed confirmations by Update, then the same over HTTP. */
const APPLICANTS = 2 * (WARM_UP + TIMED);
const TASK_QUEUE = 'bench-otp';
const ORG = DEMO.organizations.demo.id;

export async function otpBench(): Promise<void> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const base = loadDevConfig({ ...process.env, LOG_LEVEL: 'info' });
    const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
    const dev = await startDevelopmentProviders({ ...base, ...mobileMoneySettings('http://127.0.0.1:9') });
    cleanups.push(() => dev.close());
    const config = dev.config;
    if (!dev.sms || !dev.bank)
      throw new Error('the benchmark reads codes from the SMS simulator: unset SMS_PROVIDER_URL and BANK_URL');
    const secret = config.OTP_HMAC_SECRET!;
    const db = await demoDatabase(databaseUrl, dev.seedOptions, cleanups);

    // Applicants: a current account PENDING_ACTIVATION, a provisioned KYC subject, a number each.
    const applicants: BenchApplicant[] = Array.from({ length: APPLICANTS }, (_, i) => ({
      id: randomUUID(),
      current: randomUUID(),
      credit: randomUUID(),
      kycApplication: randomUUID(),
      phone: `+25472${String(i).padStart(7, '0')}`,
      idNumber: String(20_000_000 + i),
    }));
    await seedApplicants(db, ORG, applicants);

    const { client, apiUrl } = await startDeployed({
      databaseUrl,
      config,
      cliPath: base.TEMPORAL_CLI_PATH,
      taskQueue: TASK_QUEUE,
      // The processes' environment beyond startDeployed's own: the simulators of this process, the
      // key codes are kept under, and a code lifetime no part of the run comes near.
      providerEnv: {
        ...mobileMoneySettings('http://127.0.0.1:9'),
        ...currentAccountSettings({ sms: dev.sms.url, email: dev.email?.url, bank: dev.bank.url }),
        OTP_HMAC_SECRET: secret,
        OTP_TTL: '1h',
      },
      cleanups,
    });
    const tokens = await mapBounded(applicants, (a) =>
      requestToken(dev.idp.url, 'backend', { sub: a.id, aud: config.AUTH_AUDIENCE }),
    );
    const call = poster(apiUrl, tokens);

    const { activations, codes } = await prepareActivations(client, call, applicants, dev.sms.url);
    const bareIds = await prepareBareRuns(client);

    let firstError: unknown;
    const noted = (op: (i: number) => Promise<void>) => async (i: number) => {
      try {
        await op(i);
      } catch (error) {
        firstError ??= error;
        throw error;
      }
    };
    const bare = (offset: number) =>
      noted(async (i) => {
        const answer = await client.workflow.getHandle(bareIds[offset + i]!).executeUpdate(pokeUpdate);
        if (answer.outcome !== 'ACCEPTED') throw new Error(`bare Update answered ${answer.outcome}`);
      });
    const confirmByUpdate = (offset: number) =>
      noted(async (i) => {
        const id = activations[offset + i]!;
        const digest = otpDigest(secret, 'ACTIVATION', id, codes[offset + i]!);
        const answer = await client.workflow
          .getHandle(workflowIds.accountActivation(id))
          .executeUpdate(confirmOtpUpdate, { args: [{ digest }] });
        if (answer.outcome !== 'ACCEPTED') throw new Error(`confirmOtp answered ${answer.outcome}`);
      });
    const confirmOverHttp = (offset: number) =>
      noted(async (i) => {
        const body = await call(
          offset + i,
          '/v1/user/accounts/current/activation/otp/confirm',
          { otp_code: codes[offset + i] },
          200,
        );
        if (body.status !== 'ONBOARDING' && body.status !== 'COMPLETED')
          throw new Error(`confirm answered ${String(body.status)}`);
      });
    // Applicants by use: [warm-up Update | timed Update | warm-up HTTP | timed HTTP].
    const byUpdate = 0;
    const overHttp = WARM_UP + TIMED;

    await openLoop(RATE, 1, bare(0)); // warm up
    await openLoop(RATE, 1, confirmByUpdate(byUpdate));
    await openLoop(RATE, 1, confirmOverHttp(overHttp));
    await sleep(2_000); // the warm-up's bank onboardings done
    const b = await openLoop(RATE, SECONDS, bare(WARM_UP));
    const o = await openLoop(RATE, SECONDS, confirmByUpdate(byUpdate + WARM_UP));
    const h = await openLoop(RATE, SECONDS, confirmOverHttp(overHttp + WARM_UP));
    console.log(
      `\nOTP confirmation (the confirmOtp Update: validator, handler, its local-activity write) vs the bare Temporal Update  (a fixed ${RATE}/s for ${SECONDS} s each, one Update per waiting run)${QUICK ? '  [BENCH_QUICK: a smoke run]' : ''}`,
    );
    console.log(line('baseline   executeUpdate on a waiting run, handler answers at once', b, 'updates'));
    console.log(line('candidate  executeUpdate(confirmOtp) on an activation AWAITING_OTP', o, 'confirms'));
    console.log(
      `  ratio p50 ${(b.p50 / o.p50).toFixed(2)}  p99 ${(b.p99 / o.p99).toFixed(2)} (bare / OTP confirmation)`,
    );
    console.log(line('end to end POST /v1/user/accounts/current/activation/otp/confirm', h, 'confirms'));
    console.log(
      `  ratio p50 ${(b.p50 / h.p50).toFixed(2)}  p99 ${(b.p99 / h.p99).toFixed(2)} (bare / HTTP confirmation)`,
    );
    if (b.errors + o.errors + h.errors > 0)
      console.log(
        `  warning: some confirmations failed; the ratios are not trustworthy (first: ${String(firstError)})`,
      );

    await printStatuses(db, activations.length);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/**
 * Every activation started through the API, AWAITING_OTP (its run's query), and its code read
 * from the SMS simulator's control API: none of it timed. Answers the activations' ids and their
 * codes, by applicant.
 */
async function prepareActivations(
  client: Client,
  call: ReturnType<typeof poster>,
  applicants: BenchApplicant[],
  smsUrl: string,
): Promise<{ activations: string[]; codes: string[] }> {
  const prepared = performance.now();
  const activations: string[] = [];
  await inBatches(APPLICANTS, async (i) => {
    activations[i] = (await call(i, '/v1/user/accounts/current/activation', {}, 201)).id as string;
  });
  await inBatches(
    APPLICANTS,
    async (i) => {
      const handle = client.workflow.getHandle(workflowIds.accountActivation(activations[i]!));
      for (let tries = 0; (await handle.query(selfServiceStateQuery)).status !== 'AWAITING_OTP'; tries++) {
        if (tries === 600) throw new Error(`activation ${activations[i]} not AWAITING_OTP within a minute`);
        await sleep(100);
      }
    },
    32,
  );
  // The run reports AWAITING_OTP while its code is still being sent: the texts are read until all are there.
  let codeTo = new Map<string, string | undefined>();
  for (let tries = 0; applicants.some((a) => !codeTo.get(a.phone)); tries++) {
    if (tries === 600) throw new Error(`no code texted to ${applicants.find((a) => !codeTo.get(a.phone))!.phone}`);
    if (tries > 0) await sleep(100);
    const texts = (await (await fetch(`${smsUrl}/_control/messages`)).json()) as {
      to: string;
      message: string;
    }[];
    codeTo = new Map(texts.map((t) => [t.to, /(\d{6}) is your code/.exec(t.message)?.[1]]));
  }
  const codes = applicants.map((a) => codeTo.get(a.phone)!);
  console.log(
    `\n(${APPLICANTS} activations started, AWAITING_OTP and their codes read in ${((performance.now() - prepared) / 1000).toFixed(0)} s, not timed)`,
  );
  return { activations, codes };
}

/** The bare baseline's runs, started beforehand too, each waiting with its first task done. */
async function prepareBareRuns(client: Client): Promise<string[]> {
  const bareIds = Array.from({ length: WARM_UP + TIMED }, () => `bench-trivial-${randomUUID()}`);
  await inBatches(bareIds.length, async (i) => {
    await client.workflow.start('updatedOnce', { taskQueue: 'bench-trivial', workflowId: bareIds[i]! });
  });
  await inBatches(
    bareIds.length,
    async (i) => {
      const handle = client.workflow.getHandle(bareIds[i]!);
      for (let tries = 0; (await handle.describe()).historyLength < 4; tries++) {
        if (tries === 600) throw new Error(`${bareIds[i]} has not run its first task within a minute`);
        await sleep(100);
      }
    },
    32,
  );
  return bareIds;
}

/**
 * What the runs wrote: every confirmed activation on to the bank and, its onboarding approved
 * (given up to 30 s to finish), COMPLETED.
 */
async function printStatuses(db: Knex, confirmed: number): Promise<void> {
  const statuses = () =>
    db('current_account_activations')
      .select('status')
      .count<{ status: string; count: string }[]>('id as count')
      .groupBy('status')
      .orderBy('status');
  let rows = await statuses();
  for (let tries = 0; tries < 60 && rows.some((r) => r.status === 'ONBOARDING'); tries++) {
    await sleep(500);
    rows = await statuses();
  }
  console.log(
    `  checked: of ${confirmed} activations confirmed, ${rows.map((r) => `${r.count} ${r.status}`).join(', ')}`,
  );
}

if (require.main === module) {
  otpBench().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

import { DEV_CURRENT_ACCOUNT } from '../../dev/simulators';
import { startKycSimulator } from '../../simulators/kyc';
import type { ChaosRecord, ChaosSettings } from '../../simulators/chaos';
import type { ReplayReport } from '../../worker/replay';
import { inBatches } from '../lib';
import { type OperationState, operationState } from './callbacks-state';
import { compareRuns, printComparison, printDeliveries } from './callbacks-table';
import {
  type Operation,
  planOperations,
  prepareActors,
  type Sizes,
  type Started,
  startOperation,
} from './callbacks-workload';
import { checkConsistency, type ConsistencyReport, printFigures } from './consistency';
import { type SuiteOptions, startChaosDeployment, suiteOptionsOf } from './deployment';
import { replayEveryHistory, replayFigures } from './replay';
import { sleep } from './random';

/**
 * The callback chaos suite (issue 19, item 2). The same seeded workload (STK pushes, send-money
 * payouts, repayments of loans taken through the API, KYC verifications on both provider API
 * generations, and account activations whose code texts get delivery reports) runs twice, each
 * time on a fresh deployment (bench/chaos/deployment.ts) and database: once with every callback
 * delivered once, once with the simulators in chaos mode (simulators/chaos.ts: each
 * callback 0 to 3 times, at once, shuffled among others or late, after the service's status
 * query was answered, and by chance beside a forgery an attacker could send). Each operation's
 * final state (status, failure reason, amounts, ledger entries by kind, allocations, the KYC
 * verdict and its fields, how a text fared) must be the same in both runs. Prints the
 * deliveries by callback kind, the forgeries and their answers, and the comparison; true when no
 * operation differs or is stuck, and the chaos run's ledger checks are all 0.
 *
 * Two things are not comparable: when every copy of an SMS delivery report is lost, there is no
 * status query to ask (the gateway has none); when every copy of a payout's B2C queue timeout is
 * lost, the provider's "not found" alone does not release the hold (its meaning is assumed), so
 * the payout ends FAILED NO_RESULT at the wait's end. Those operations are counted apart (what
 * they became is printed), not as mismatches. A payout whose B2C results are all lost is
 * compared like the rest: the service asks the provider's Transaction Status (its results are
 * callbacks too, under the same chaos).
 *
 * Environment: CHAOS_SEED; sizes CHAOS_CALLBACK_PUSHES, _PAYOUTS, _REPAYMENTS, _KYC (half on
 * each API generation), _ACTIVATIONS.
 */
const BOUNDED: Sizes = { stk_push: 12, send_money: 6, repayment: 4, kyc_v2: 4, kyc_v3: 4, activation: 4 };
const FULL: Sizes = { stk_push: 200, send_money: 50, repayment: 20, kyc_v2: 25, kyc_v3: 25, activation: 20 };

/** The service's waits, short enough for a run to settle by its fallbacks (status queries, the result wait). */
const TIMINGS: Record<string, string> = {
  STK_PUSH_CALLBACK_WAIT: '3s',
  STK_PUSH_QUERY_INTERVAL: '1s',
  STK_PUSH_QUERY_DEADLINE: '60s',
  SEND_MONEY_RESULT_WAIT: '12s',
  // A few status queries within the wait, so that losing every answer of every one is rare.
  SEND_MONEY_STATUS_QUERY_AFTER: '2s',
  SEND_MONEY_STATUS_QUERY_INTERVAL: '2s',
  KYC_CALLBACK_WAIT: '3s',
};
/** Late callbacks with no query come before SEND_MONEY_RESULT_WAIT ends (else the wait decides, not the callback). */
const CHAOS: Omit<ChaosSettings, 'seed'> = {
  copies: [1, 1, 1, 1],
  shuffled: 0.25,
  late: 0.25,
  forged: 0.5,
  windowMs: 500,
  lateMaxMs: 4_000,
};
const KYC = { partnerId: '2101', apiKey: 'chaos-callbacks-kyc-key-not-a-secret' };

interface Run {
  states: OperationState[];
  records: ChaosRecord[];
  refused: number;
  consistency: ConsistencyReport;
  replay: ReplayReport;
  seconds: number;
}

const sizes = (bounded: boolean): Sizes => {
  const base = bounded ? BOUNDED : FULL;
  const env = (name: string, fallback: number) => Number(process.env[`CHAOS_CALLBACK_${name}`] ?? fallback);
  const kyc = env('KYC', base.kyc_v2 + base.kyc_v3);
  return {
    stk_push: env('PUSHES', base.stk_push),
    send_money: env('PAYOUTS', base.send_money),
    repayment: env('REPAYMENTS', base.repayment),
    kyc_v2: Math.ceil(kyc / 2),
    kyc_v3: Math.floor(kyc / 2),
    activation: env('ACTIVATIONS', base.activation),
  };
};

async function control(url: string, path: string, method: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${url}/_control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url}/_control${path}: ${response.status} ${text}`);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/** One run of the workload on a fresh deployment, with chaos off (null) or on. */
async function runOnce(
  operations: Operation[],
  chaos: ChaosSettings | null,
  deadlineMs: number,
  cluster?: boolean,
): Promise<Run> {
  const cleanups: (() => Promise<unknown>)[] = [];
  const began = Date.now();
  try {
    // The KYC simulator runs here: its partner allow-list takes this machine's http callback URLs (v3).
    const kyc = await startKycSimulator({ ...KYC, callbackAllowList: ['https://', 'http://127.0.0.1:'] });
    cleanups.push(() => kyc.close());
    const deployment = await startChaosDeployment({
      workers: 1,
      taskQueue: `chaos-callbacks-${chaos ? 'chaos' : 'clean'}`,
      env: {
        ...TIMINGS,
        KYC_PROVIDER_URL: kyc.url,
        KYC_PARTNER_ID: KYC.partnerId,
        KYC_API_KEY: KYC.apiKey,
        KYC_PROVIDER_CA: kyc.certificate,
      },
      cluster,
      cleanups,
    });
    const { db, apiUrl, simulators } = deployment;
    const actors = await prepareActors({ ...deployment, operations });

    const reportUrl = `${apiUrl}/v1/current-account/callbacks/sms/delivery-reports/${DEV_CURRENT_ACCOUNT.sms.callbackToken}`;
    await control(simulators.mobileMoney, '/mode', 'PATCH', { chaos, callbackDelayMs: 50 });
    // A delivery report follows the handset's receipt of the text, a while after the send was answered.
    const sms = { deliveryReportUrl: reportUrl, interimReports: true, deliveryDelayMs: 1_000 };
    await control(simulators.sms, '/mode', 'PATCH', { chaos, ...sms });
    await control(kyc.url, '/', 'PATCH', { chaos });
    const outcome = (userId: string, wanted: string) =>
      control(kyc.url, `/outcomes/${userId}`, 'PUT', { outcome: wanted }).then(() => undefined);

    const started: Started[] = [];
    let refused = 0;
    await inBatches(
      operations.length,
      async (i) => {
        try {
          started[i] = await startOperation(apiUrl, operations[i]!, actors[i]!, { outcome });
        } catch (error) {
          refused++;
          started[i] = {};
          console.error(`  operation ${i} (${operations[i]!.kind}) not started: ${(error as Error).message}`);
        }
      },
      6,
    );
    const stateOf = (i: number) => operationState(db, operations[i]!, actors[i]!, started[i]!);
    // Only what is still in flight is read again, a few at a time (this process also runs the KYC simulator).
    let pending = operations.map((op) => op.index);
    for (const deadline = Date.now() + deadlineMs; pending.length > 0 && Date.now() < deadline;) {
      await sleep(2_000);
      const still: number[] = [];
      await inBatches(pending.length, async (j) => {
        if (!(await stateOf(pending[j]!)).final) still.push(pending[j]!);
      });
      pending = still;
    }
    // What chaos still holds (late callbacks with no query, a shuffled batch) arrives before the final read.
    if (chaos) await sleep(CHAOS.lateMaxMs + CHAOS.windowMs + 1_000);
    const states: OperationState[] = [];
    await inBatches(operations.length, async (i) => {
      states[i] = await stateOf(i);
      // What the provider made of a verification, for reading a mismatch.
      if (started[i]!.applicationId)
        states[i]!.evidence = kyc
          .jobs()
          .filter((job) => job.userId === actors[i]!.id)
          .map((job) => `provider job ${job.apiVersion} ${job.state} ${job.outcome}, ${job.callbacksSent} callback(s)`);
    });

    const records = chaos
      ? (
          await Promise.all(
            [simulators.mobileMoney, kyc.url, simulators.sms].map((url) => control(url, '/chaos', 'GET')),
          )
        ).flat()
      : [];
    const transactions = started.flatMap((s) => (s.transactionId ? [s.transactionId] : []));
    const kycApplications = started.flatMap((s) => (s.applicationId ? [s.applicationId] : []));
    return {
      states,
      records: records as ChaosRecord[],
      refused,
      consistency: await checkConsistency(db, { transactions, kycApplications, loanApplications: [], activations: [] }),
      replay: await replayEveryHistory(deployment.temporal),
      seconds: (Date.now() - began) / 1000,
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

export async function runCallbackChaos(options: SuiteOptions): Promise<boolean> {
  const seed = Number(process.env.CHAOS_SEED ?? 20261126);
  const size = sizes(options.bounded);
  const operations = planOperations(seed, size);
  const deadlineMs = options.bounded ? 150_000 : 600_000;
  const counts = Object.entries(size)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ');
  console.log(`\nCallback chaos: ${operations.length} operations (${counts}), seed ${seed}`);
  const clean = await runOnce(operations, null, deadlineMs, options.cluster);
  console.log(`  clean run: ${clean.seconds.toFixed(0)} s`);
  const chaos = await runOnce(operations, { seed, ...CHAOS }, deadlineMs, options.cluster);
  console.log(`  chaos run: ${chaos.seconds.toFixed(0)} s`);

  printDeliveries(chaos.records);
  const { rows, unrecoverableAs } = compareRuns(operations, clean.states, chaos.states, chaos.records);
  printComparison(rows);
  if (unrecoverableAs.size > 0) {
    console.log(
      '\nEvery copy lost of a callback no status query can replace (SMS delivery reports, payout queue timeouts; not compared): what those operations became',
    );
    for (const [became, n] of unrecoverableAs) console.log(`  ${n} × ${became}`);
  }
  const sum = (pick: (r: (typeof rows)[number]) => number) => rows.reduce((n, r) => n + pick(r), 0);
  const c = chaos.consistency;
  return printFigures('Callback chaos: expected zeros', [
    { name: 'operations not started (either run)', value: clean.refused + chaos.refused, expectZero: true },
    { name: 'mismatches', value: sum((r) => r.mismatches), expectZero: true },
    { name: 'stuck (clean run)', value: sum((r) => r.stuckClean), expectZero: true },
    { name: 'stuck (chaos run)', value: sum((r) => r.stuckChaos), expectZero: true },
    { name: 'double postings (chaos run)', value: c.doublePostings, expectZero: true },
    { name: 'holds left (chaos run)', value: c.holdsLeft, expectZero: true },
    { name: 'postings not matching (chaos run)', value: c.postingsNotMatching, expectZero: true },
    { name: 'allocations not matching (chaos run)', value: c.allocationsNotMatching, expectZero: true },
    { name: 'ledger total (chaos run)', value: c.ledgerTotal, expectZero: true },
    { name: 'lost with no status query (not compared)', value: sum((r) => r.unrecoverable) },
    ...replayFigures(clean.replay, chaos.replay),
  ]);
}

if (require.main === module) {
  runCallbackChaos(suiteOptionsOf(process.argv)).then(
    (ok) => process.exit(ok ? 0 : 1),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

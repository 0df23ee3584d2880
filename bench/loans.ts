import { randomUUID } from 'node:crypto';
import { loadDevConfig } from '../dev/config';
import { DEMO } from '../db/seeds/demo';
import { mobileMoneySettings, startDevelopmentProviders } from '../dev/simulators';
import { requestToken } from '../simulators/identity';
import { workflowIds } from '../workflows/ids';
import { offerStateQuery } from '../workflows/loans/messages';
import { benchDatabase, demoDatabase } from './database';
import { seedBorrowers } from './seed';
import { startDeployed } from './deployed';
import { closedLoop, line, type Loop, mapBounded, openLoop } from './lib';

/**
 * Loans, part 1, with the service as deployed (API and worker each in its own process, Postgres,
 * a Temporal dev server):
 *   - Eligibility and terms (POST /v1/accounts/loan/applications/{organization}, each for a new
 *     borrower: the data read, the offer written, its workflow started): requests per second
 *     against the bare Temporal start measured in the same run (a workflow that completes at once,
 *     worker in its own process), at the same concurrency; then p50 and p99 at 20 requests/s.
 *   - Apply (POST .../partner-b: collateral hold, loan and schedule, disbursement, the loan's
 *     workflow started) end to end: p50 and p99 at 10 applies/s, on offers made beforehand.
 */
const CONCURRENCY = 16;
const SECONDS = 5;
const BORROWERS = 6_000;
const TASK_QUEUE = 'bench-loans';
const ORG = DEMO.organizations.demo.id;

export async function loansBench(): Promise<void> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const base = loadDevConfig({ ...process.env, LOG_LEVEL: 'info' });
    const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
    const dev = await startDevelopmentProviders({ ...base, ...mobileMoneySettings('http://127.0.0.1:9') });
    cleanups.push(() => dev.close());
    const config = dev.config;
    const db = await demoDatabase(databaseUrl, dev.seedOptions, cleanups);

    // Borrowers: KYC approved, a current account with money for collateral, a credit account.
    const borrowers = Array.from({ length: BORROWERS }, () => ({
      id: randomUUID(),
      current: randomUUID(),
      credit: randomUUID(),
    }));
    await seedBorrowers(db, ORG, borrowers, 20_000); // 200.00 each

    const { client, apiUrl } = await startDeployed({
      databaseUrl,
      config,
      cliPath: base.TEMPORAL_CLI_PATH,
      taskQueue: TASK_QUEUE,
      providerEnv: mobileMoneySettings('http://127.0.0.1:9'),
      cleanups,
    });

    const tokens = new Map<string, string>();
    const tokenOf = async (id: string) => {
      let token = tokens.get(id);
      if (!token) {
        token = await requestToken(dev.idp.url, 'backend', { sub: id, aud: config.AUTH_AUDIENCE });
        tokens.set(id, token);
      }
      return token;
    };
    let nextBorrower = 0;
    const borrower = () => {
      const b = borrowers[nextBorrower++];
      if (!b) throw new Error('out of bench borrowers');
      return b;
    };
    const offer = async (b: (typeof borrowers)[number]) => {
      const response = await fetch(`${apiUrl}/v1/accounts/loan/applications/${ORG}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await tokenOf(b.id)}`, 'content-type': 'application/json' },
        body: '{}',
      });
      if (response.status !== 201) throw new Error(`offer answered ${response.status}`);
      return ((await response.json()) as { id: string }).id;
    };
    const apply = async (b: (typeof borrowers)[number], applicationId: string) => {
      const response = await fetch(`${apiUrl}/v1/accounts/loan/applications/partner-b`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await tokenOf(b.id)}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          application_id: applicationId,
          loan_amount: 100_000,
          tenure: { duration: 2, unit: 'WEEKS' },
          collateral_amount: 10_000,
        }),
      });
      const body = (await response.json()) as { status: string };
      if (response.status !== 200 || body.status !== 'DISBURSED') throw new Error(`apply answered ${response.status}`);
    };
    const eligibility = async () => void (await offer(borrower()));
    const bare = async () =>
      void (await client.workflow.start('startedOnly', {
        taskQueue: 'bench-trivial',
        workflowId: `bench-trivial-${randomUUID()}`,
      }));
    // Tokens first, so the loops measure the service, not the identity provider.
    await mapBounded(borrowers.slice(0, 4_000), (b) => tokenOf(b.id));

    for (const op of [bare, eligibility]) await closedLoop(CONCURRENCY, 1, op); // warm up
    const rounds: { base: Loop; offers: Loop }[] = [];
    for (let r = 0; r < 3; r++)
      rounds.push({
        base: await closedLoop(CONCURRENCY, SECONDS, bare),
        offers: await closedLoop(CONCURRENCY, SECONDS, eligibility),
      });
    const median = (pick: (x: (typeof rounds)[number]) => Loop) =>
      [...rounds].map(pick).sort((a, b) => a.perSecond - b.perSecond)[1]!;
    const b = median((x) => x.base);
    const o = median((x) => x.offers);
    console.log(
      `\nLoan eligibility and terms (offer written, workflow started) vs the bare Temporal start  (${CONCURRENCY} in flight, 3 x ${SECONDS}s rounds, medians)`,
    );
    console.log(line('baseline   client.workflow.start of a workflow that completes at once', b, 'starts'));
    console.log(line('candidate  POST /v1/accounts/loan/applications/{organization}', o, 'offers'));
    console.log(`  ratio ${(o.perSecond / b.perSecond).toFixed(2)} of the bare start`);
    console.log(line('at a fixed 20 requests/s for 10 s', await openLoop(20, 10, eligibility), 'offers'));

    // Apply end to end: offers made beforehand (not measured), then taken at a fixed rate.
    const takers = Array.from({ length: 150 }, () => borrower());
    const offers = await mapBounded(takers, (t) => offer(t));
    // Each offer's run has done its first task (a query waits for it): a hundred new workflows at
    // once queue seconds of first tasks on one worker, which would be measured as apply latency.
    await mapBounded(offers, (id) => client.workflow.getHandle(workflowIds.loanApplication(id)).query(offerStateQuery));
    const gentle = await openLoop(5, 10, (i) => apply(takers[i]!, offers[i]!));
    const applied = await openLoop(10, 10, (i) => apply(takers[50 + i]!, offers[50 + i]!));
    console.log(`\nApply (partner-b): collateral hold, loan and schedule, disbursement, loan workflow started`);
    console.log(line('at a fixed 5 applies/s for 10 s', gentle, 'applies'));
    console.log(line('at a fixed 10 applies/s for 10 s', applied, 'applies'));
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

if (require.main === module) {
  loansBench().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

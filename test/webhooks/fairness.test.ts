import { strict as assert } from 'node:assert';
import { type HostileTenant, startHostileTenant } from '../../bench/chaos/hostile-tenant';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { type Customer, insertStkPushTransaction, newCustomer, until } from '../support/money';
import { awaitReceived, registerEndpoint, removeEndpoints, type Registered } from '../support/webhooks';

/** A transaction of the customer's made FAILED in the database: the trigger emits transaction.failed. */
async function failedTransaction(customer: Customer): Promise<string> {
  const row = await insertStkPushTransaction(customer, 10_000);
  await harness()
    .db('transactions')
    .where({ id: row.id })
    .update({ status: 'FAILED', failure_reason: 'CANCELLED_BY_USER', failed_at: new Date() });
  return row.id;
}

/**
 * Issue 54, finding 1: an organization's admin pointed WEBHOOK_ENDPOINTS_MAX endpoints at a
 * receiver that accepts connections and never answers, with events to send to each, and another
 * organization's deliveries went from 0.2 s to 35 s. Here the hostile tenant is the second
 * organization (bench/chaos/hostile-tenant.ts: its endpoints and events written as its own API
 * calls and state changes would have), and the demo organization's deliveries are timed from
 * commit to arrival beside it.
 */
describe('webhooks under a hostile tenant: one organization’s dead receivers do not delay another’s deliveries', () => {
  const made: Registered[] = [];
  let hostile: HostileTenant | undefined;
  after(async () => {
    await removeEndpoints(made);
    await hostile?.close();
  });

  it('with 16 dead endpoints of one organization each given events to send, another organization’s deliveries, once the tenant’s runs are under way, still arrive within a second or two of their commit; the dead endpoints hold at most WEBHOOK_ORGANIZATION_CONCURRENCY attempts at once (their backing off is the deliveries suite’s)', async function () {
    this.timeout(120_000);
    const { db, config } = harness();
    const customer = await newCustomer(0);
    const victim = await registerEndpoint(['transaction.failed']);
    made.push(victim);
    const copied = await failedTransaction(customer);
    const template = (await until('an event to copy', () =>
      db('webhook_events').where({ resource_id: copied }).first('snapshot'),
    )) as { snapshot: unknown };
    hostile = await startHostileTenant(db, {
      organizationId: DEMO.organizations.second.id,
      endpoints: config.WEBHOOK_ENDPOINTS_MAX,
      eventsPerEndpoint: 12,
      type: 'transaction.failed',
      snapshot: template.snapshot,
    });
    const tenant = hostile;
    // While its runs start, the dispatcher keeps no more of them than
    // WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION waiting for their first attempt (the rest of its
    // deliveries wait in Postgres): sampled for its first seconds.
    let mostUntried = 0;
    for (const until = Date.now() + 3_000; Date.now() < until;) {
      const [row] = await db('webhook_deliveries')
        .where({ organization_id: DEMO.organizations.second.id, status: 'PENDING' })
        .whereNotNull('workflow_started_at')
        .whereNull('tried_at')
        .count<{ n: string }[]>({ n: '*' });
      mostUntried = Math.max(mostUntried, Number(row!.n));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(
      mostUntried > 0 && mostUntried <= config.WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION,
      `at most ${config.WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION} of its runs waiting for a first attempt, saw ${mostUntried}`,
    );
    // Its attempts in flight as the worker allows.
    await until(
      'the dead receiver holds attempts',
      async () => tenant.inFlight() >= config.WEBHOOK_ORGANIZATION_CONCURRENCY,
      30_000,
    );
    tenant.mostSinceLast();
    const lags: number[] = [];
    for (let i = 0; i < 5; i++) {
      const id = await failedTransaction(customer);
      const [arrived] = await awaitReceived(victim.name, id, 1, 30_000);
      const event = await db('webhook_events').where({ resource_id: id }).first('occurred_at');
      lags.push(Date.parse(arrived!.receivedAt) - event.occurred_at.getTime());
    }
    assert.ok(
      lags.every((lag) => lag < 2_000),
      `the other organization's deliveries, commit to arrival: ${lags.join(', ')} ms`,
    );
    // Sockets are counted as the receiver sees them: one closing may still be counted as the next opens.
    const most = tenant.mostSinceLast();
    assert.ok(
      most <= config.WEBHOOK_ORGANIZATION_CONCURRENCY + 2,
      `at most ${config.WEBHOOK_ORGANIZATION_CONCURRENCY} attempts of the hostile tenant at once, saw ${most}`,
    );
  });
});

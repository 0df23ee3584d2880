import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { insertEndpoint } from '../../db/webhooks/endpoints';
import { EVENT_TYPES } from '../../domain/webhooks/events';
import { newSecret } from '../../providers/webhooks/signature';
import { type RecordedDelivery, startWebhookReceiver } from '../../simulators/webhook-receiver';
import type { Figure } from './consistency';
import { sleep } from './random';

/**
 * Where each event's resource lives and the status its row keeps once the event's state
 * committed; `null`: a state the row may leave again (an overdue installment gets paid), checked
 * for the row only; absent: the status the event carries.
 */
const RESOURCES: Record<string, { table: string; column?: string; status?: string | boolean | null }> = {
  'transaction.posted': { table: 'transactions', status: 'POSTED' },
  'transaction.failed': { table: 'transactions', status: 'FAILED' },
  'kyc.application.completed': { table: 'kyc_applications' },
  'loan.disbursed': { table: 'loan_applications', status: 'DISBURSED' },
  'loan.repaid': { table: 'loans', status: 'REPAID' },
  'installment.overdue': { table: 'installments', status: null },
  'current_account.activated': { table: 'current_account_activations', status: 'COMPLETED' },
  'phone_change.completed': { table: 'phone_changes', status: 'COMPLETED' },
  'invoice.extracted': { table: 'financing_invoices', status: 'EXTRACTED' },
  'webhook_endpoint.disabled': { table: 'webhook_endpoints', column: 'enabled', status: false },
};

interface Received {
  webhookId: string;
  type: string;
  data: { id: string; status?: string };
}

/**
 * Webhooks under a chaos suite: the receiver simulator registered for every event type of the
 * suite's organization, then, once the suite settled, what a client app would count: state
 * changes whose event never arrived (lost), one state change arriving under two webhook-ids,
 * deliveries of a state the database does not hold (never committed), and deliveries the
 * standardwebhooks package did not verify. Each expected 0.
 */
export async function startWebhookAudit(db: Knex, organizationId: string, cleanups: (() => Promise<unknown>)[]) {
  const receiver = await startWebhookReceiver();
  cleanups.push(() => receiver.close());
  const name = 'chaos';
  const endpoint = await insertEndpoint(
    db,
    organizationId,
    {
      id: randomUUID(),
      url: `${receiver.url}/webhooks/${name}`,
      description: 'chaos suite audit',
      event_types: EVENT_TYPES,
      enabled: true,
      secret: newSecret(),
    },
    Number.MAX_SAFE_INTEGER,
  );
  receiver.register(name, [endpoint!.secret]);
  // Events that committed before the endpoint did have no delivery, rightly (the demo seed's):
  // counted are those from after it, by the database's clock.
  const subscribedAt = ((await db.raw('select clock_timestamp() as at')) as { rows: { at: Date }[] }).rows[0]!.at;

  const received = (): Received[] =>
    receiver
      .deliveries()
      .filter((d: RecordedDelivery) => d.verified && d.webhookId !== null)
      .map((d) => ({ webhookId: d.webhookId!, ...(d.body as Omit<Received, 'webhookId'>) }));

  return {
    /** Commit (the event's timestamp) to its arrival at the receiver, of every verified delivery so far, in ms. */
    lagsMs: (): number[] =>
      receiver
        .deliveries()
        .filter((d: RecordedDelivery) => d.verified)
        .map((d) => Date.parse(d.receivedAt) - Date.parse((d.body as { timestamp: string }).timestamp)),
    /** Waits (up to `waitMs`) for every event of the organization to arrive, then counts. */
    async figures(waitMs: number): Promise<Figure[]> {
      const events = () =>
        db('webhook_events')
          .where({ organization_id: organizationId })
          .where('occurred_at', '>', subscribedAt)
          .select<{ id: string; type: string }[]>('id', 'type');
      const deadline = Date.now() + waitMs;
      let missing: { id: string; type: string }[] = [];
      for (;;) {
        const arrived = new Set(received().map((r) => r.webhookId));
        missing = (await events()).filter((e) => !arrived.has(e.id));
        if (missing.length === 0 || Date.now() > deadline) break;
        await sleep(500);
      }
      for (const event of missing.slice(0, 10)) {
        const delivery = await db('webhook_deliveries').where({ event_id: event.id }).first();
        const row = await db('webhook_events').where({ id: event.id }).first('occurred_at', 'dispatched_at');
        console.log(
          `    webhook not delivered: ${event.type} ${event.id} occurred ${row?.occurred_at?.toISOString()} ` +
            `dispatched ${row?.dispatched_at?.toISOString() ?? 'no'}; delivery ${delivery ? `${delivery.status} ` + `attempts ${delivery.attempts}, started ${delivery.workflow_started_at?.toISOString() ?? 'no'}, ${delivery.last_error ?? ''}` : 'none'}`,
        );
      }
      const got = received();
      const idsPerChange = new Map<string, Set<string>>();
      for (const r of got) {
        const change = `${r.type}/${r.data.id}/${r.data.status ?? ''}`;
        idsPerChange.set(change, (idsPerChange.get(change) ?? new Set()).add(r.webhookId));
      }
      let neverCommitted = 0;
      for (const r of got) {
        const resource = RESOURCES[r.type];
        const column = resource?.column ?? 'status';
        const row = resource
          ? await db(resource.table).where({ id: r.data.id }).first(`${column} as status`)
          : undefined;
        const status = resource?.status === undefined ? r.data.status : resource.status;
        if (!row || (status !== null && row.status !== status)) neverCommitted += 1;
      }
      const finalWithoutEvent = await db('transactions as t')
        .where({ 't.organization_id': organizationId })
        .whereIn('t.status', ['POSTED', 'FAILED'])
        .whereNotExists(db('webhook_events as e').whereRaw('e.resource_id = t.id::text'))
        .count<{ count: string }[]>({ count: '*' });
      return [
        { name: 'webhook events', value: (await events()).length },
        { name: 'webhook deliveries verified at the receiver', value: got.length },
        { name: 'final transactions without an event', value: Number(finalWithoutEvent[0]!.count), expectZero: true },
        { name: 'events lost (never delivered)', value: missing.length, expectZero: true },
        {
          name: 'state changes delivered under two webhook-ids',
          value: [...idsPerChange.values()].filter((ids) => ids.size > 1).length,
          expectZero: true,
        },
        { name: 'deliveries of states never committed', value: neverCommitted, expectZero: true },
        {
          name: 'deliveries the receiver could not verify',
          value: receiver.deliveries().filter((d) => !d.verified).length,
          expectZero: true,
        },
      ];
    },
  };
}

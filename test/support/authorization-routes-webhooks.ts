import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { insertEndpoint } from '../../db/webhooks/endpoints';
import type { TransactionFields } from '../../domain/mobile-money/views';
import { newSecret } from '../../providers/webhooks/signature';
import { type CallerKind, type Org, traits } from './authorization-matrix';
import { db, type Exercise, type Fixture, type Instance, problem, row, type Rows } from './authorization-exercise';
import type { World } from './authorization-world';
import { harness } from './harness';
import { until } from './money';
import { receivedAbout } from './webhooks';

// The matrix's exercises of the webhook routes (extension; see authorization-exercise.ts).

const ORGS: Org[] = ['own', 'other'];
const EVENT_TYPE = 'transaction.failed';

/** An endpoint at a receiver of its own name on the receiver simulator, its secret registered there. */
async function endpointIn(world: World, org: Org) {
  const name = `matrix-${randomUUID()}`;
  const made = await insertEndpoint(
    db(),
    world.organizations[org],
    {
      id: randomUUID(),
      url: `${harness().webhookReceiver.url}/webhooks/${name}`,
      description: null,
      event_types: [EVENT_TYPE],
      enabled: true,
      secret: newSecret(),
    },
    harness().config.WEBHOOK_ENDPOINTS_MAX,
  );
  assert.ok(made, `an endpoint of ${world.organizations[org]} (at most WEBHOOK_ENDPOINTS_MAX)`);
  harness().webhookReceiver.register(name, [made.secret]);
  return { id: made.id, name, url: made.url, secret: made.secret };
}
type Endpoint = Awaited<ReturnType<typeof endpointIn>>;

/** A FAILED transactions row as the trigger snapshots it (what transactionView renders), its dates ISO strings. */
function failedTransaction(id: string, resourceId: string): Record<keyof TransactionFields, unknown> {
  const now = new Date().toISOString();
  return {
    id,
    resource_id: resourceId,
    status: 'FAILED',
    mobilemoney_transaction_id: null,
    amount: 10_000,
    fee_amount: 0,
    currency: 'KES',
    failure_reason: 'CANCELLED_BY_USER',
    transacted_at: now,
    confirmed_at: null,
    posted_at: null,
    failed_at: now,
    details: { type: 'PAYBILL' },
  };
}

/** A transaction.failed event in the outbox, as the trigger writes one (the dispatcher is told, as at a commit). */
async function eventIn(world: World, org: Org) {
  const transaction = randomUUID();
  const resource = `trx_${randomBytes(12).toString('base64url')}`;
  const [made] = await db()('webhook_events')
    .insert({
      organization_id: world.organizations[org],
      type: EVENT_TYPE,
      resource_id: transaction,
      // As webhook_emit keys a change: the resource and the committing transaction.
      change_key: db().raw(`? || '@' || txid_current()`, [transaction]),
      snapshot: failedTransaction(transaction, resource),
    })
    .returning<{ id: string; occurred_at: Date }[]>(['id', 'occurred_at']);
  await db().raw(`select pg_notify('webhook_events', '')`);
  return { id: made!.id, occurredAt: made!.occurred_at, transaction, resource };
}
type Event = Awaited<ReturnType<typeof eventIn>>;

/**
 * An endpoint and an event of the organization, the event delivered to it by the service's own
 * dispatcher and settled (SUCCEEDED, its run marked started), so only a call moves its delivery.
 */
async function deliveredIn(world: World, org: Org) {
  const endpoint = await endpointIn(world, org);
  const event = await eventIn(world, org);
  const delivery = await until(
    `event ${event.id} delivered to ${endpoint.name}`,
    async () => {
      const found = await row('webhook_deliveries', { event_id: event.id, endpoint_id: endpoint.id });
      return found?.status === 'SUCCEEDED' && found.workflow_started_at !== null && (found.id as string);
    },
    20_000,
  );
  return { endpoint, event, delivery };
}
type Delivered = Awaited<ReturnType<typeof deliveredIn>>;

const LABEL: Record<Org, string> = { own: "the organization's", other: "the other organization's" };
const endpointTarget = (org: Org, endpoint: Endpoint, extra: string[] = []): Instance => ({
  label: `${LABEL[org]} endpoint`,
  organization: org,
  ids: { id: endpoint.id, receiver: endpoint.name },
  secrets: [endpoint.url, endpoint.secret, ...extra],
});
const eventTarget = (org: Org, event: Event, extra: string[] = []): Instance => ({
  label: `${LABEL[org]} event`,
  organization: org,
  ids: { id: event.id, transaction: event.transaction },
  secrets: [event.transaction, event.resource, ...extra],
});

/** Each route's fixture ends with the organizations' endpoints gone (each holds at most WEBHOOK_ENDPOINTS_MAX). */
const cleanupOf = (world: World) => async () => {
  await db()('webhook_endpoints').whereIn('organization_id', Object.values(world.organizations)).delete();
};
const organizationOf = (kind: CallerKind, world: World) => world.organizations[traits(kind).organization!];

/** One endpoint per organization (`targets` names them; the caller routes list them). */
async function endpointFixture(world: World): Promise<Fixture & { endpoints: Record<Org, Endpoint> }> {
  const [own, other] = await Promise.all(ORGS.map((org) => endpointIn(world, org)));
  const endpoints = { own: own!, other: other! };
  return {
    endpoints,
    targets: ORGS.map((org) => endpointTarget(org, endpoints[org])),
    cleanup: cleanupOf(world),
  };
}
/** One delivered event per organization. */
async function deliveredFixture(world: World): Promise<Record<Org, Delivered>> {
  const [own, other] = await Promise.all(ORGS.map((org) => deliveredIn(world, org)));
  return { own: own!, other: other! };
}

// ---------------------------------------------------------------------------------------------
// Endpoints

const ENDPOINT_COLUMNS = ['url', 'description', 'event_types', 'enabled', 'secret', 'previous_secret'];
const endpointRows = (target: Instance | undefined): Rows[] => [
  { table: 'webhook_endpoints', where: { id: target!.ids.id! }, columns: ENDPOINT_COLUMNS },
];

const createEndpoint: Exercise = {
  async prepare(world) {
    const { endpoints, cleanup } = await endpointFixture(world);
    // Nothing of the organizations' endpoints reaches a caller refused.
    return { targets: [], secrets: ORGS.flatMap((o) => [endpoints[o].url, endpoints[o].secret]), cleanup };
  },
  request: () => ({
    json: { url: `${harness().webhookReceiver.url}/webhooks/matrix-${randomUUID()}`, event_types: [EVENT_TYPE] },
  }),
  rows: (_target, _people, { world }) => [
    { table: 'webhook_endpoints', where: { organization_id: Object.values(world.organizations) }, columns: ['id'] },
  ],
  async done({ kind }, reply, { world }) {
    const made = await row('webhook_endpoints', { id: reply.body.id });
    if (made?.organization_id !== organizationOf(kind, world)) return `the endpoint is ${made?.organization_id}'s`;
    return problem(made.secret === reply.body.secret && made.url === reply.body.url, 'not the endpoint answered');
  },
};
const listEndpoints: Exercise = {
  async prepare(world) {
    const fixture = await endpointFixture(world);
    const { endpoints } = fixture;
    return {
      targets: [],
      secrets: ORGS.flatMap((o) => [endpoints[o].id, endpoints[o].url, endpoints[o].secret]),
      values: { own: endpoints.own.id, other: endpoints.other.id },
      cleanup: fixture.cleanup,
    };
  },
  shows({ kind }, reply, { fixture }) {
    const org = traits(kind).organization!;
    const listed = (reply.body.data as { id: string }[]).map((e) => e.id);
    const another = fixture.values![org === 'own' ? 'other' : 'own']!;
    if (listed.includes(another)) return "leak: lists another organization's endpoint";
    if (/whsec_/.test(JSON.stringify(reply.body))) return 'leak: lists a secret';
    return problem(listed.includes(fixture.values![org]!), "does not list the organization's endpoint");
  },
};
const readEndpoint: Exercise = {
  prepare: endpointFixture,
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  shows({ target }, reply) {
    if (reply.body.secret !== undefined) return 'leak: shows its secret';
    return problem(reply.body.id === target!.ids.id, `id ${reply.body.id}`);
  },
};
const updateEndpoint: Exercise = {
  prepare: endpointFixture,
  request: ({ kind, target }) => ({ params: { id: target!.ids.id! }, json: { description: `matrix ${kind}` } }),
  rows: endpointRows,
  async done({ kind, target }) {
    const changed = await row('webhook_endpoints', { id: target!.ids.id });
    return problem(changed?.description === `matrix ${kind}`, `the description is ${changed?.description}`);
  },
};
const deleteEndpoint: Exercise = {
  async prepare(world) {
    const fixture = await endpointFixture(world);
    // Each allowed delete uses its endpoint up: another of the same organization.
    return {
      ...fixture,
      fresh: async (target) => endpointTarget(target.organization!, await endpointIn(world, target.organization!)),
    };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  rows: endpointRows,
  async done({ target }) {
    return problem(
      (await row('webhook_endpoints', { id: target!.ids.id })) === undefined,
      'the endpoint is still there',
    );
  },
};
const rotateSecret: Exercise = {
  prepare: endpointFixture,
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  rows: endpointRows,
  async done({ target }, reply) {
    const rotated = await row('webhook_endpoints', { id: target!.ids.id });
    return problem(
      rotated?.secret === reply.body.secret && rotated?.previous_secret !== null,
      'the answered secret is not the one stored, or the previous one is gone',
    );
  },
};

// ---------------------------------------------------------------------------------------------
// Events and deliveries

const listEvents: Exercise = {
  async prepare(world) {
    const [own, other] = await Promise.all(ORGS.map((org) => eventIn(world, org)));
    const since = new Date(Math.min(own!.occurredAt.getTime(), other!.occurredAt.getTime()));
    return {
      targets: [],
      secrets: [own!, other!].flatMap((e) => [e.id, e.transaction, e.resource]),
      values: { own: own!.id, other: other!.id, since: since.toISOString() },
    };
  },
  // Only events from the fixture's on: what other routes' transactions emitted meanwhile stays out of the page.
  request: (_cell, { fixture }) => ({ query: { since: fixture.values!.since!, size: '100' } }),
  shows({ kind }, reply, { fixture }) {
    const org = traits(kind).organization!;
    const listed = (reply.body.data as { id: string }[]).map((e) => e.id);
    if (listed.includes(fixture.values![org === 'own' ? 'other' : 'own']!))
      return "leak: lists another organization's event";
    return problem(listed.includes(fixture.values![org]!), "does not list the organization's event");
  },
};
const readEvent: Exercise = {
  async prepare(world) {
    const events = await Promise.all(ORGS.map((org) => eventIn(world, org)));
    return { targets: ORGS.map((org, i) => eventTarget(org, events[i]!)) };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  shows({ target }, reply) {
    if (reply.body.id !== target!.ids.id) return `id ${reply.body.id}`;
    return problem(
      reply.body.type === EVENT_TYPE && reply.body.data?.id === target!.ids.transaction,
      'not the transaction the event carries',
    );
  },
};
const eventDeliveries: Exercise = {
  async prepare(world) {
    const delivered = await deliveredFixture(world);
    return {
      targets: ORGS.map((org) =>
        eventTarget(org, delivered[org].event, [delivered[org].delivery, delivered[org].endpoint.id]),
      ),
      cleanup: cleanupOf(world),
    };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  shows({ target }, reply) {
    const listed = reply.body.data as { event_id: string }[];
    return problem(
      listed.length > 0 && listed.every((d) => d.event_id === target!.ids.id),
      `${listed.length} deliveries, not all the event's`,
    );
  },
};
const endpointDeliveries: Exercise = {
  async prepare(world) {
    const delivered = await deliveredFixture(world);
    return {
      targets: ORGS.map((org) =>
        endpointTarget(org, delivered[org].endpoint, [
          delivered[org].delivery,
          delivered[org].event.id,
          delivered[org].event.resource,
        ]),
      ),
      cleanup: cleanupOf(world),
    };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  shows({ target }, reply) {
    const listed = reply.body.data as { endpoint_id: string }[];
    return problem(
      listed.length > 0 && listed.every((d) => d.endpoint_id === target!.ids.id),
      `${listed.length} deliveries, not all the endpoint's`,
    );
  },
};

/** A resend's delivery row (its run started again moves workflow_started_at). */
const deliveryRows = (where: Record<string, string>): Rows[] => [
  { table: 'webhook_deliveries', where, columns: ['id', 'workflow_started_at'] },
];
/** What an allowed resend must have done: the delivery's run started again, and the receiver verified it anew. */
async function resent(ids: Record<string, string>, since: Date): Promise<string | undefined> {
  const delivery = await row('webhook_deliveries', { event_id: ids.event, endpoint_id: ids.endpoint });
  const started = delivery?.workflow_started_at as Date | undefined;
  if (!started || started < since) return 'the delivery was not started again';
  return until(`the event at ${ids.receiver} again`, () =>
    receivedAbout(ids.receiver!, ids.transaction!).some(
      (d) => d.verified && Date.parse(d.receivedAt) >= since.getTime(),
    ),
  ).then(
    () => undefined,
    () => 'the receiver did not get the event again',
  );
}
const resendIds = (d: Delivered) => ({
  event: d.event.id,
  endpoint: d.endpoint.id,
  receiver: d.endpoint.name,
  transaction: d.event.transaction,
});

/** The event named, to its organization's endpoint; and the organization's event naming the other organization's endpoint. */
const resendEvent: Exercise = {
  async prepare(world) {
    const delivered = await deliveredFixture(world);
    const target = (org: Org): Instance => ({
      ...eventTarget(org, delivered[org].event, [delivered[org].delivery]),
      ids: { id: delivered[org].event.id, ...resendIds(delivered[org]) },
    });
    return {
      targets: [
        target('own'),
        {
          ...target('own'),
          label: "the organization's event, the other organization's endpoint",
          mismatch: true,
          ids: { ...target('own').ids, endpoint: delivered.other.endpoint.id },
        },
        target('other'),
      ],
      cleanup: cleanupOf(world),
    };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! }, json: { endpoint_id: target!.ids.endpoint } }),
  rows: (target) => deliveryRows({ event_id: target!.ids.id! }),
  done: ({ target }, _reply, _context, since) => resent(target!.ids, since),
};
/** The endpoint named, every event since its organization's fixture event. */
const resendEndpoint: Exercise = {
  async prepare(world) {
    const delivered = await deliveredFixture(world);
    return {
      targets: ORGS.map((org) => ({
        ...endpointTarget(org, delivered[org].endpoint, [delivered[org].delivery, delivered[org].event.id]),
        ids: {
          id: delivered[org].endpoint.id,
          since: delivered[org].event.occurredAt.toISOString(),
          ...resendIds(delivered[org]),
        },
      })),
      cleanup: cleanupOf(world),
    };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! }, json: { since: target!.ids.since } }),
  rows: (target) => deliveryRows({ endpoint_id: target!.ids.id! }),
  done: ({ target }, _reply, _context, since) => resent(target!.ids, since),
};

export const WEBHOOK_EXERCISES: Record<string, Exercise> = {
  'POST /v1/webhooks/endpoints': createEndpoint,
  'GET /v1/webhooks/endpoints': listEndpoints,
  'GET /v1/webhooks/endpoints/{id}': readEndpoint,
  'PATCH /v1/webhooks/endpoints/{id}': updateEndpoint,
  'DELETE /v1/webhooks/endpoints/{id}': deleteEndpoint,
  'POST /v1/webhooks/endpoints/{id}/secret/rotate': rotateSecret,
  'GET /v1/webhooks/events': listEvents,
  'GET /v1/webhooks/events/{id}': readEvent,
  'GET /v1/webhooks/events/{id}/deliveries': eventDeliveries,
  'GET /v1/webhooks/endpoints/{id}/deliveries': endpointDeliveries,
  'POST /v1/webhooks/events/{id}/resend': resendEvent,
  'POST /v1/webhooks/endpoints/{id}/resend': resendEndpoint,
};

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import type { RecordedDelivery } from '../../simulators/webhook-receiver';
import { harness } from './harness';
import { call } from './http';
import { until } from './money';
import { backendToken, bearer } from './tokens';

/** The demo organization's admin: holds webhooks.manage. */
export const adminHeaders = async () => bearer(await backendToken(DEMO.users.admin.id));

/** The receiver simulator's control API. */
export async function receiverControl(path: string, method: string, body?: unknown): Promise<Response> {
  return fetch(`${harness().webhookReceiver.url}/_control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export interface Registered {
  id: string;
  name: string;
  secret: string;
  url: string;
}

/**
 * A webhook endpoint of the demo organization at a receiver of its own name (so tests sharing the
 * receiver simulator never read each other's deliveries), its secret registered with the receiver.
 */
export async function registerEndpoint(eventTypes: string[], headers?: Record<string, string>): Promise<Registered> {
  const name = `r-${randomUUID()}`;
  const url = `${harness().webhookReceiver.url}/webhooks/${name}`;
  const reply = await call('POST', '/v1/webhooks/endpoints', {
    headers: headers ?? (await adminHeaders()),
    json: { url, event_types: eventTypes },
  });
  assert.equal(reply.status, 201, reply.text);
  harness().webhookReceiver.register(name, [reply.body.secret]);
  return { id: reply.body.id, name, secret: reply.body.secret, url };
}

/** Deletes the endpoints a test registered (their deliveries end at their next attempt). */
export async function removeEndpoints(endpoints: Registered[]) {
  const headers = await adminHeaders();
  for (const endpoint of endpoints) await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { headers });
}

/** What a receiver got about one resource (an event's data.id). */
export const receivedAbout = (name: string, resourceId: string): RecordedDelivery[] =>
  harness()
    .webhookReceiver.deliveries()
    .filter((d) => d.name === name && (d.body as { data?: { id?: string } } | null)?.data?.id === resourceId);

/** Waits until the receiver holds `count` deliveries about the resource. */
export const awaitReceived = (name: string, resourceId: string, count = 1, timeoutMs = 20_000) =>
  until(
    `${count} deliveries about ${resourceId} at ${name}`,
    () => {
      const got = receivedAbout(name, resourceId);
      return got.length >= count && got;
    },
    timeoutMs,
  );

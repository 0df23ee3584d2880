import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { harness } from './harness';
import { call } from './http';
import { backendToken, bearer } from './tokens';

/** A small real JPEG header plus bytes: enough for the service and the simulator. */
export { JPEG_BASE64 } from '../../dev/customer-stages';

export async function applicantHeaders(user: { id: string }) {
  return bearer(await backendToken(user.id));
}

/** A fresh CUSTOMER of the demo organization, so tests never share an application. */
export async function newApplicant(profile: { name?: string | null; phone_number?: string | null } = {}) {
  const { db } = harness();
  const user = {
    id: randomUUID(),
    organization_id: DEMO.organizations.demo.id,
    email: `${randomUUID()}@demo-lender.test`,
    name: 'name' in profile ? profile.name : 'Test Applicant',
    phone_number: 'phone_number' in profile ? profile.phone_number : '+254700000000',
  };
  await db('users').insert(user);
  await db('user_access').insert({ user_id: user.id, organization_id: user.organization_id, role: 'CUSTOMER' });
  return user;
}

export async function newApplication(user: { id: string }): Promise<string> {
  const reply = await call('POST', '/v1/kyc/applications', { headers: await applicantHeaders(user) });
  assert.equal(reply.status, 201, reply.text);
  return reply.body.id as string;
}

export function simulatorControl(path: string, method: string, body?: unknown) {
  return fetch(`${harness().kyc.url}/_control${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Polls GET status until the application leaves ID_VERIFICATION_PENDING (or the time is up). */
export async function settledStatus(user: { id: string }, applicationId: string, timeoutMs = 20_000) {
  const headers = await applicantHeaders(user);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await call('GET', `/v1/kyc/applications/${applicationId}/status`, { headers });
    if (reply.body?.status !== 'ID_VERIFICATION_PENDING' || Date.now() > deadline) return reply;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '../../api/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import {
  applicantHeaders,
  JPEG_BASE64,
  newApplicant,
  newApplication,
  settledStatus,
  simulatorControl,
} from '../support/kyc';
import { until } from '../support/money';
import { bearer } from '../support/tokens';

const DEMO_ORG = DEMO.organizations.demo.id;
const SECOND_ORG = DEMO.organizations.second.id;

/** A server_upload with everything a provisioned subject holds: an ID card with its number, front, back and selfie. */
const fullUpload = (idNumber: string) => ({
  channel: 'server_upload',
  id_type: 'IDENTITY_CARD',
  id_number: idNumber,
  selfie: JPEG_BASE64,
  document_front: JPEG_BASE64,
  document_back: JPEG_BASE64,
  consent: true,
});
/**
 * No verification records a date of birth (neither provider generation returns one to us), yet
 * a provisioned subject has one: tests write it where an onboarding would have.
 */
const recordDateOfBirth = (userId: string, date: string | null = '1990-04-12') =>
  harness().db('kyc_subjects').where({ user_id: userId }).update({ date_of_birth: date });

describe('spec 4.2: internal KYC lookups (/v1/internal/kyc and /api/internal/kyc)', () => {
  let applicant: Awaited<ReturnType<typeof newApplicant>>;
  let applicationId: string;
  before(async function () {
    this.timeout(60_000);
    applicant = await newApplicant();
    applicationId = await newApplication(applicant);
    const reply = await call('POST', `/v1/kyc/applications/${applicationId}/verification`, {
      headers: await applicantHeaders(applicant),
      json: fullUpload('99887760'),
    });
    assert.equal(reply.status, 202, reply.text);
    assert.equal((await settledStatus(applicant, applicationId)).body.status, 'APPROVED');
    await recordDateOfBirth(applicant.id);
  });

  const status = (prefix: string, headers: Record<string, string>, organization?: string) =>
    call('GET', `${prefix}/status?user_id=${applicant.id}${organization ? `&organization_id=${organization}` : ''}`, {
      headers,
    });

  for (const prefix of ['/v1/internal/kyc', '/api/internal/kyc']) {
    it(`${prefix}/status answers the internal status resource to an operator of the organization`, async () => {
      const reply = await status(prefix, await applicantHeaders(DEMO.users.internal));
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.user_id, applicant.id);
      assert.equal(reply.body.organization_id, DEMO_ORG);
      assert.equal(reply.body.application_id, applicationId);
      assert.equal(reply.body.status, 'APPROVED');
      assert.equal(reply.body.user_type, 'INDIVIDUAL');
      assert.equal(reply.body.verification_result, 'PASSED');
      assert.equal(reply.body.verification_reason_code, '0810');
      assert.equal(reply.body.resubmission_count, 0);
      assert.ok(reply.body.verification_completed_at);
      assert.equal(reply.body.subject.id_number, '99887760');
      assert.equal(reply.body.subject.identity_type, 'IDENTITY_CARD');
      assert.equal(reply.body.subject.organization_user_id, applicant.id);
    });
  }

  it('the organization matrix: users, organization keys and platform keys', async () => {
    const { db } = harness();
    // The user themself, without organization_id: allowed; with it: 403.
    assert.equal((await status('/v1/internal/kyc', await applicantHeaders(applicant))).status, 200);
    assert.equal((await status('/v1/internal/kyc', await applicantHeaders(applicant), DEMO_ORG)).status, 403);
    // Another customer without kyc.read: 403.
    assert.equal((await status('/v1/internal/kyc', await applicantHeaders(DEMO.users.customer))).status, 403);
    // Another organization's operator acts for their own organization, where this user is unknown.
    assert.equal((await status('/v1/internal/kyc', await applicantHeaders(DEMO.users.secondInternal))).status, 404);
    // An organization API key: its own organization; organization_id refused.
    const orgKey = (await createApiKey(db, { organizationId: DEMO_ORG })).key;
    assert.equal((await status('/v1/internal/kyc', bearer(orgKey))).status, 200);
    const refused = await status('/v1/internal/kyc', bearer(orgKey), DEMO_ORG);
    assert.equal(refused.status, 403);
    assert.deepEqual(
      refused.body.invalid_params.map((p: { sub_code: string }) => p.sub_code),
      ['NOT_ALLOWED'],
    );
    // A platform key: organization_id honoured when it is the user's; optional (see below).
    const platformKey = (await createApiKey(db, { platform: true })).key;
    assert.equal((await status('/api/internal/kyc', bearer(platformKey), DEMO_ORG)).status, 200);
    assert.equal((await status('/api/internal/kyc', bearer(platformKey), SECOND_ORG)).status, 404);
    assert.equal((await status('/api/internal/kyc', bearer(platformKey))).status, 200);
  });

  it('spec 4.2 and 5.6: a platform key "may pass organization_id": without it the user\'s own organization applies; another organization is 404', async () => {
    const { db } = harness();
    const platformKey = bearer((await createApiKey(db, { platform: true })).key);
    for (const prefix of ['/v1/internal/kyc', '/api/internal/kyc']) {
      // Optional: without it, the organization is the user's own, in either organization.
      const own = await status(prefix, platformKey);
      assert.equal(own.status, 200, own.text);
      assert.equal(own.body.organization_id, DEMO_ORG);
      assert.equal(own.body.application_id, applicationId);
      const second = await call('GET', `${prefix}/status?user_id=${DEMO.users.secondCustomer.id}`, {
        headers: platformKey,
      });
      assert.equal(second.status, 200, second.text);
      assert.equal(second.body.organization_id, SECOND_ORG);
      assert.equal(second.body.user_id, DEMO.users.secondCustomer.id);
      const subject = await call('GET', `${prefix}/subjects/${applicant.id}`, { headers: platformKey });
      assert.equal(subject.status, 200, subject.text);
      assert.equal(subject.body.organization_id, DEMO_ORG);
      // Passed, it must be the user's organization: another one reads nothing (404, never that tenant's data).
      assert.equal((await status(prefix, platformKey, DEMO_ORG)).body.application_id, applicationId);
      for (const reply of [
        await status(prefix, platformKey, SECOND_ORG),
        await call('GET', `${prefix}/subjects/${applicant.id}?organization_id=${SECOND_ORG}`, { headers: platformKey }),
        await call('GET', `${prefix}/status?user_id=${DEMO.users.secondCustomer.id}&organization_id=${DEMO_ORG}`, {
          headers: platformKey,
        }),
      ]) {
        assert.equal(reply.status, 404, reply.text);
        assert.equal(reply.body.code, 'NOT_FOUND');
        assert.ok(!reply.text.includes(applicant.id) && !reply.text.includes(DEMO.users.secondCustomer.id));
      }
      // A user nobody knows: 404 alike, with or without organization_id.
      const nobody = randomUUID();
      for (const query of [`user_id=${nobody}`, `user_id=${nobody}&organization_id=${DEMO_ORG}`]) {
        const reply = await call('GET', `${prefix}/status?${query}`, { headers: platformKey });
        assert.equal(reply.status, 404, reply.text);
      }
    }
    // A platform key without kyc.read is refused before anything is looked up.
    const bare = bearer((await createApiKey(db, { platform: true, permissions: [] })).key);
    assert.equal((await status('/v1/internal/kyc', bare)).status, 403);
  });

  it('validates user_id and refuses unknown query fields', async () => {
    const headers = await applicantHeaders(DEMO.users.internal);
    const reply = await call('GET', '/v1/internal/kyc/status?user_id=nope&extra=1', { headers });
    assert.equal(reply.status, 400);
    assert.deepEqual(
      reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]).sort(),
      [
        ['query.extra', 'UNKNOWN_FIELD'],
        ['query.user_id', 'INVALID_UUID'],
      ],
    );
  });

  it('subject details: 404 before a subject is provisioned, then identity and images inline as base64', async () => {
    const headers = await applicantHeaders(DEMO.users.internal);
    const fresh = await newApplicant();
    await newApplication(fresh);
    const missing = await call('GET', `/v1/internal/kyc/subjects/${fresh.id}`, { headers });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'NOT_FOUND');
    assert.deepEqual(missing.body.invalid_params, []);
    const found = await call('GET', `/api/internal/kyc/subjects/${applicant.id}`, { headers });
    assert.equal(found.status, 200, found.text);
    assert.equal(found.body.application_id, applicationId);
    assert.equal(found.body.subject.id_number, '99887760');
    assert.equal(found.body.subject.date_of_birth, '1990-04-12');
    assert.deepEqual(
      found.body.documents.map((d: { kind: string; image_base64: string }) => [d.kind, d.image_base64]),
      [
        ['DOCUMENT_BACK', JPEG_BASE64],
        ['DOCUMENT_FRONT', JPEG_BASE64],
        ['SELFIE', JPEG_BASE64],
      ],
    );
  });

  it('spec 4.2: subject details "Returns 404 when the user has no provisioned subject yet": a submitted verification still pending is 404, an approved one with a complete identity 200', async function () {
    this.timeout(60_000);
    const headers = await applicantHeaders(DEMO.users.internal);
    const subjects = (prefix: string, userId: string) => call('GET', `${prefix}/subjects/${userId}`, { headers });
    await simulatorControl('/', 'PATCH', { holdJobs: true });
    try {
      const user = await newApplicant();
      const id = await newApplication(user);
      const submitted = await call('POST', `/v1/kyc/applications/${id}/verification`, {
        headers: await applicantHeaders(user),
        json: fullUpload('55443320'),
      });
      assert.equal(submitted.status, 202, submitted.text);
      // Everything of the identity is on file; only the verdict is missing.
      await recordDateOfBirth(user.id);
      const lookup = await call('GET', `/v1/internal/kyc/status?user_id=${user.id}`, { headers });
      assert.equal(lookup.body.status, 'ID_VERIFICATION_PENDING', lookup.text);
      for (const prefix of ['/v1/internal/kyc', '/api/internal/kyc']) {
        const pending = await subjects(prefix, user.id);
        assert.equal(pending.status, 404, `${prefix}: ${pending.text}`);
        assert.equal(pending.body.code, 'NOT_FOUND');
        assert.deepEqual(pending.body.invalid_params, []);
        assert.ok(!pending.text.includes('55443320'), 'no identity while pending');
      }
      const job = await until('the job at the provider', async () => {
        const jobs = (await (await simulatorControl('/jobs', 'GET')).json()) as {
          userId: string;
          smileJobId: string;
        }[];
        return jobs.find((j) => j.userId === user.id);
      });
      await simulatorControl(`/jobs/${job.smileJobId}/release`, 'POST');
      assert.equal((await settledStatus(user, id)).body.status, 'APPROVED');
      const provisioned = await subjects('/api/internal/kyc', user.id);
      assert.equal(provisioned.status, 200, provisioned.text);
      assert.equal(provisioned.body.application_id, id);
      assert.equal(provisioned.body.subject.id_number, '55443320');
      // Approved but no longer a complete identity (activation's definition): 404 again.
      await recordDateOfBirth(user.id, null);
      assert.equal((await subjects('/v1/internal/kyc', user.id)).status, 404);
    } finally {
      await simulatorControl('/', 'PATCH', { holdJobs: false });
    }
  });
});

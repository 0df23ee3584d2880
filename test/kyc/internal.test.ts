import { strict as assert } from 'node:assert';
import { createApiKey } from '../../api/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { applicantHeaders, JPEG_BASE64, newApplicant, newApplication, settledStatus } from '../support/kyc';
import { bearer } from '../support/tokens';

const DEMO_ORG = DEMO.organizations.demo.id;

describe('spec 4.2: internal KYC lookups (/v1/internal/kyc and /api/internal/kyc)', () => {
  let applicant: Awaited<ReturnType<typeof newApplicant>>;
  let applicationId: string;
  before(async function () {
    this.timeout(60_000);
    applicant = await newApplicant();
    applicationId = await newApplication(applicant);
    const reply = await call('POST', `/v1/kyc/applications/${applicationId}/verification`, {
      headers: await applicantHeaders(applicant),
      json: {
        channel: 'server_upload',
        id_type: 'IDENTITY_CARD',
        id_number: '99887760',
        selfie: JPEG_BASE64,
        document_front: JPEG_BASE64,
        consent: true,
      },
    });
    assert.equal(reply.status, 202, reply.text);
    assert.equal((await settledStatus(applicant, applicationId)).body.status, 'APPROVED');
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
    // A platform key: organization_id honoured (and required).
    const platformKey = (await createApiKey(db, { platform: true })).key;
    assert.equal((await status('/api/internal/kyc', bearer(platformKey), DEMO_ORG)).status, 200);
    assert.equal((await status('/api/internal/kyc', bearer(platformKey), DEMO.organizations.second.id)).status, 404);
    assert.equal((await status('/api/internal/kyc', bearer(platformKey))).status, 400);
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
    assert.equal(found.body.subject.id_number, '99887760');
    assert.deepEqual(
      found.body.documents.map((d: { kind: string; image_base64: string }) => [d.kind, d.image_base64]),
      [
        ['DOCUMENT_FRONT', JPEG_BASE64],
        ['SELFIE', JPEG_BASE64],
      ],
    );
  });
});

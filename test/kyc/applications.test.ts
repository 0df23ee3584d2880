import { strict as assert } from 'node:assert';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { applicantHeaders, newApplicant, newApplication } from '../support/kyc';

const as = applicantHeaders;
const createApplication = async (user: { id: string }) => ({ id: await newApplication(user) });

describe('KYC applications (extension: POST /v1/kyc/applications)', () => {
  it("creates the caller's DRAFT application in the status shape", async () => {
    const user = await newApplicant();
    const reply = await call('POST', '/v1/kyc/applications', { headers: await as(user) });
    assert.equal(reply.status, 201);
    assert.deepEqual(Object.keys(reply.body).sort(), ['can_submit', 'id', 'message', 'needs_review', 'status']);
    assert.equal(reply.body.status, 'DRAFT');
    assert.equal(reply.body.can_submit, true);
    assert.equal(reply.body.needs_review, false);
  });

  it('allows one active application per user: a second gets 409 in the validation shape', async () => {
    const user = await newApplicant();
    await createApplication(user);
    const second = await call('POST', '/v1/kyc/applications', { headers: await as(user) });
    assert.equal(second.status, 409);
    assert.equal(second.body.code, 'CONFLICT');
    assert.deepEqual(second.body.invalid_params, []);
  });

  it('the seeded demo application is there for the demo customer', async () => {
    const { db } = harness();
    const row = await db('kyc_applications').where({ id: DEMO.kycApplication.id }).first();
    assert.equal(row.user_id, DEMO.users.customer.id);
  });

  it('GET status answers a change made a moment ago: a status kept in memory is dropped when Postgres announces the change', async () => {
    const user = await newApplicant();
    const { id } = await createApplication(user);
    const headers = await as(user);
    const status = () => call('GET', `/v1/kyc/applications/${id}/status`, { headers });
    assert.equal((await status()).body.status, 'DRAFT');
    assert.equal((await status()).body.status, 'DRAFT'); // now kept in memory
    await harness().db('kyc_applications').where({ id }).update({ status: 'EXPIRED', reason: 'test' });
    const deadline = Date.now() + 2_000; // far below the memory's safety-net lifetime (60 s)
    let seen = (await status()).body.status;
    while (seen !== 'EXPIRED' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      seen = (await status()).body.status;
    }
    assert.equal(seen, 'EXPIRED');
  });

  it('the seeded finished applications read through GET status: approved is final, rejected may be submitted again', async () => {
    const approved = await call('GET', `/v1/kyc/applications/${DEMO.kycHistory.approved.id}/status`, {
      headers: await as(DEMO.users.customerByAuthId),
    });
    assert.equal(approved.status, 200);
    assert.equal(approved.body.status, 'APPROVED');
    assert.equal(approved.body.can_submit, false);
    const rejected = await call('GET', `/v1/kyc/applications/${DEMO.kycHistory.rejected.id}/status`, {
      headers: await as(DEMO.users.secondCustomer),
    });
    assert.equal(rejected.status, 200);
    assert.equal(rejected.body.status, 'REJECTED');
    assert.equal(rejected.body.can_submit, true);
  });
});

describe('spec 4.2: GET /v1/kyc/applications/{id}/verification', () => {
  const requirements = (id: string, headers: Record<string, string>) =>
    call('GET', `/v1/kyc/applications/${id}/verification`, { headers });

  it('answers v2 requirements when the header is omitted, empty or unrecognised', async () => {
    const user = await newApplicant();
    const { id } = await createApplication(user);
    for (const versions of [undefined, '', 'v7, beta']) {
      const headers = {
        ...(await as(user)),
        ...(versions === undefined ? {} : { 'X-Provider-Api-Versions': versions }),
      };
      const reply = await requirements(id, headers);
      assert.equal(reply.status, 200, String(versions));
      assert.equal(reply.body.requires_liveness, false);
      assert.equal(reply.body.min_liveness_images, 0);
      const kenya = reply.body.supported_documents.find((d: { country: string }) => d.country === 'KE');
      assert.ok(!kenya.id_types.some((t: { code: string }) => t.code === 'DRIVERS_LICENSE'));
    }
    assert.equal((await harness().db('kyc_applications').where({ id }).first()).negotiated_api_version, 'v2');
  });

  it('answers the newest common version, in any order, and records it without changing the status', async () => {
    const user = await newApplicant();
    const { id } = await createApplication(user);
    const reply = await requirements(id, { ...(await as(user)), 'X-Provider-Api-Versions': 'v3, v2' });
    assert.equal(reply.status, 200);
    assert.deepEqual(Object.keys(reply.body).sort(), [
      'consent_notice',
      'max_liveness_images',
      'min_liveness_images',
      'missing_applicant_fields',
      'requires_consent',
      'requires_document',
      'requires_liveness',
      'requires_selfie',
      'supported_documents',
    ]);
    assert.equal(reply.body.requires_liveness, true);
    // v3 EDV itself takes 6 to 8 frames (protocols/kyc-provider.md): the requirements say so.
    assert.equal(reply.body.min_liveness_images, 6);
    assert.equal(reply.body.max_liveness_images, 8);
    assert.equal(reply.body.requires_consent, true);
    assert.deepEqual(reply.body.consent_notice, {
      language: 'EN',
      privacy_policy_url: harness().config.KYC_PRIVACY_POLICY_URL,
    });
    const kenya = reply.body.supported_documents.find((d: { country: string }) => d.country === 'KE');
    assert.ok(
      kenya.id_types.some((t: { code: string; has_back: boolean }) => t.code === 'DRIVERS_LICENSE' && t.has_back),
    );
    const row = await harness().db('kyc_applications').where({ id }).first();
    assert.equal(row.negotiated_api_version, 'v3');
    assert.equal(row.status, 'DRAFT', 'side-effect free on the status');
  });

  it("lists the applicant's missing profile fields", async () => {
    const user = await newApplicant({ name: null, phone_number: null });
    const { id } = await createApplication(user);
    const reply = await requirements(id, await as(user));
    assert.deepEqual(reply.body.missing_applicant_fields, ['name', 'phone']);
  });

  it("answers 404 for another user's application and 400 INVALID_UUID for a malformed id, in the validation shape", async () => {
    const owner = await newApplicant();
    const { id } = await createApplication(owner);
    const stranger = await requirements(id, await as(await newApplicant()));
    assert.equal(stranger.status, 404);
    assert.equal(stranger.body.code, 'NOT_FOUND');
    assert.deepEqual(stranger.body.invalid_params, []);
    const otherOrg = await requirements(id, await as(DEMO.users.secondCustomer));
    assert.equal(otherOrg.status, 404);
    const malformed = await requirements('not-a-uuid', await as(owner));
    assert.equal(malformed.status, 400);
    assert.deepEqual(
      malformed.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      [['path.id', 'INVALID_UUID']],
    );
    const anonymous = await requirements(id, {});
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.code, 'UNAUTHORISED');
    assert.deepEqual(anonymous.body.invalid_params, []);
  });
});

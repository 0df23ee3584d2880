import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { scheduleIds, workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { JPEG_BASE64, simulatorControl } from '../support/kyc';
import { backendToken, bearer } from '../support/tokens';

const JPEG = Buffer.from(JPEG_BASE64, 'base64');

const sweep = (headers: Record<string, string>, query = '') =>
  call('POST', `/v1/internal/kyc/applications/expirations${query}`, { headers });

/** A fresh organization with an operator, so each test sweeps a population of its own. */
async function newOrganization() {
  const { db } = harness();
  const organizationId = `org-sweep-${randomUUID().slice(0, 8)}`;
  await db('organizations').insert({ id: organizationId, name: 'Sweep test' });
  const operator = { id: randomUUID(), organization_id: organizationId, email: `${randomUUID()}@sweep.test` };
  await db('users').insert(operator);
  await db('user_access').insert({ user_id: operator.id, organization_id: organizationId, role: 'INTERNAL' });
  return { organizationId, operator, headers: bearer(await backendToken(operator.id)) };
}

type ProviderState = 'approved' | 'rejected' | 'unknown' | 'running' | 'recent';

/** Pending applications past the submission window, each in the given state at the provider. */
async function population(organizationId: string, states: ProviderState[]) {
  const { db, deps, config } = harness();
  const rows = [];
  for (const state of states) {
    const user = { id: randomUUID(), organization_id: organizationId, email: `${randomUUID()}@sweep.test` };
    await db('users').insert(user);
    const jobId = randomUUID();
    if (state === 'approved' || state === 'rejected' || state === 'running') {
      if (state === 'running') await simulatorControl('/', 'PATCH', { holdJobs: true });
      await deps.providers.kyc.submitDocumentVerification({
        apiVersion: 'v2',
        jobId,
        userId: user.id,
        country: 'KE',
        idType: 'IDENTITY_CARD',
        idNumber: state === 'rejected' ? '11111111' : '22222220',
        applicant: { name: 'Sweep Applicant', email: user.email },
        consent: {
          granted: true,
          grantedAt: new Date(),
          noticeLanguage: 'EN',
          privacyPolicyUrl: config.KYC_PRIVACY_POLICY_URL,
        },
        callbackUrl: 'http://127.0.0.1:1/nowhere',
        images: { selfie: JPEG, documentFront: JPEG },
      });
      if (state === 'running') await simulatorControl('/', 'PATCH', { holdJobs: false });
    }
    const submittedAt = state === 'recent' ? new Date() : new Date(Date.now() - config.KYC_SUBMISSION_WINDOW - 60_000);
    rows.push({
      id: randomUUID(),
      organization_id: organizationId,
      user_id: user.id,
      status: 'ID_VERIFICATION_PENDING',
      api_version: 'v2',
      job_id: jobId,
      submitted_at: submittedAt,
    });
  }
  await db('kyc_applications').insert(rows);
  // Let the simulator finish the jobs that are not held.
  await new Promise((resolve) => setTimeout(resolve, 400));
  return rows.map((row, i) => ({ id: row.id, state: states[i]! }));
}

describe('spec 3 and 4.2: the KYC expiry sweep', () => {
  it('the fan-out starts one sweep per organization and finishes without waiting for them', async function () {
    this.timeout(60_000);
    const { client, taskQueue, db } = harness();
    const { organizationId } = await newOrganization();
    const [app] = await population(organizationId, ['unknown']);
    const workflowId = `kyc-expiry-sweep-all-test/${randomUUID()}`;
    const run = await client.workflow.start('kycExpirySweepAll', { workflowId, taskQueue, args: [{ batchSize: 50 }] });
    const { started } = (await run.result()) as { started: number };
    const organizations = await db('organizations').count<{ count: string }[]>({ count: '*' });
    assert.ok(started >= 1 && started <= Number(organizations[0]!.count));
    for (
      let i = 0;
      i < 100 && (await db('kyc_applications').where({ id: app!.id }).first()).status !== 'EXPIRED';
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal((await db('kyc_applications').where({ id: app!.id }).first()).status, 'EXPIRED');
    // The first recording (organizations started one at a time) stays beside this one.
    await recordHistory(workflowId, 'kycExpirySweepAll-concurrent-starts');
  });

  // The schedule is paused so each test decides when its organization is swept; one test triggers it.
  before(async () => harness().client.schedule.getHandle(scheduleIds.kycExpirySweep).pause('sweep tests'));
  after(async () => harness().client.schedule.getHandle(scheduleIds.kycExpirySweep).unpause());
  afterEach(async () => simulatorControl('/', 'PATCH', { failWith: 0, holdJobs: false }));

  it("hostile review: a v3 application holding another user's finished job is never approved by the sweep (EXPIRED)", async function () {
    this.timeout(60_000);
    const { db, config } = harness();
    const { organizationId, headers } = await newOrganization();
    const [applicant, owner] = [randomUUID(), randomUUID()];
    for (const id of [applicant, owner])
      await db('users').insert({ id, organization_id: organizationId, email: `${randomUUID()}@sweep.test` });
    // A clear v3 job of the owner, at the provider; the applicant's application names it.
    const made = (await (
      await simulatorControl('/jobs', 'POST', {
        jobs: [{ job_id: randomUUID(), user_id: owner, api_version: 'v3', state: 'final', outcome: 'approve' }],
      })
    ).json()) as { jobs: { job_id: string }[] };
    const id = randomUUID();
    await db('kyc_applications').insert({
      id,
      organization_id: organizationId,
      user_id: applicant,
      status: 'ID_VERIFICATION_PENDING',
      api_version: 'v3',
      job_id: randomUUID(),
      provider_job_id: made.jobs[0]!.job_id,
      submitted_at: new Date(Date.now() - config.KYC_SUBMISSION_WINDOW - 60_000),
    });
    const reply = await sweep(headers);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.result, { scanned: 1, expired: 1, completed: 0, still_pending: 0, failed: 0 });
    assert.equal((await db('kyc_applications').where({ id }).first()).status, 'EXPIRED');
  });

  it('asks the provider about every stale pending application: final → completed, unknown → EXPIRED, running → left pending', async function () {
    this.timeout(60_000);
    const { organizationId, headers } = await newOrganization();
    const apps = await population(organizationId, [
      'approved',
      'approved',
      'rejected',
      'unknown',
      'unknown',
      'running',
      'recent',
    ]);
    const reply = await sweep(headers);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['finished_at', 'job', 'organization_id', 'result', 'started_at']);
    assert.equal(reply.body.job, 'KYC_STALE_SESSION_EXPIRY');
    assert.equal(reply.body.organization_id, organizationId);
    assert.deepEqual(reply.body.result, { scanned: 6, expired: 2, completed: 3, still_pending: 1, failed: 0 });
    const statuses = Object.fromEntries(
      (
        await harness()
          .db('kyc_applications')
          .whereIn(
            'id',
            apps.map((a) => a.id),
          )
      ).map((row) => [row.id, row.status]),
    );
    assert.deepEqual(
      apps.map((a) => [a.state, statuses[a.id]]),
      [
        ['approved', 'APPROVED'],
        ['approved', 'APPROVED'],
        ['rejected', 'REJECTED'],
        ['unknown', 'EXPIRED'],
        ['unknown', 'EXPIRED'],
        ['running', 'ID_VERIFICATION_PENDING'],
        ['recent', 'ID_VERIFICATION_PENDING'],
      ],
    );
    await recordHistory(workflowIds.kycExpirySweep(organizationId), 'kycExpirySweep');
  });

  it('a manual run follows the interval: within it, the last result is answered and nothing is asked again', async function () {
    this.timeout(60_000);
    const { organizationId, headers } = await newOrganization();
    await population(organizationId, ['unknown']);
    const first = await sweep(headers);
    assert.deepEqual(first.body.result, { scanned: 1, expired: 1, completed: 0, still_pending: 0, failed: 0 });
    await population(organizationId, ['unknown']);
    const second = await sweep(headers);
    assert.deepEqual(second.body, first.body, 'the same (last) run');
    const pending = await harness()
      .db('kyc_applications')
      .where({ organization_id: organizationId, status: 'ID_VERIFICATION_PENDING' });
    assert.equal(pending.length, 1, 'the new stale application waits for the next window');
  });

  it('counts a provider error as failed and leaves the application pending', async function () {
    this.timeout(60_000);
    const { organizationId, headers } = await newOrganization();
    const [app] = await population(organizationId, ['unknown']);
    await simulatorControl('/', 'PATCH', { failWith: 503 });
    const reply = await sweep(headers);
    assert.deepEqual(reply.body.result, { scanned: 1, expired: 0, completed: 0, still_pending: 0, failed: 1 });
    assert.equal(
      (await harness().db('kyc_applications').where({ id: app!.id }).first()).status,
      'ID_VERIFICATION_PENDING',
    );
  });

  it('RBAC: accounts.write at ORG scope for the own organization, or PLATFORM; organization_id is refused', async function () {
    this.timeout(60_000);
    const { organizationId, headers } = await newOrganization();
    const customer = await sweep(bearer(await backendToken(DEMO.users.customer.id)));
    assert.equal(customer.status, 403);
    assert.equal(customer.body.code, 'FORBIDDEN');
    assert.deepEqual(customer.body.invalid_params, []);
    const refused = await sweep(headers, `?organization_id=${organizationId}`);
    assert.equal(refused.status, 403);
    assert.deepEqual(
      refused.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      [['query.organization_id', 'NOT_ALLOWED']],
    );
    const platform = await sweep(bearer(await backendToken(DEMO.users.platformAdmin.id)));
    assert.equal(platform.status, 200);
    assert.equal(platform.body.organization_id, DEMO.users.platformAdmin.organization_id);
    assert.equal(
      (await call('POST', '/api/internal/kyc/applications/expirations', { headers })).status,
      200,
      'cluster-local prefix',
    );
    assert.equal((await sweep({})).status, 401);
  });

  it('the schedule sweeps every organization, and a manual run alongside it neither blocks nor is blocked', async function () {
    this.timeout(60_000);
    const { client, db } = harness();
    const { organizationId, headers } = await newOrganization();
    const [app] = await population(organizationId, ['unknown']);
    const schedule = client.schedule.getHandle(scheduleIds.kycExpirySweep);
    const [, manual] = await Promise.all([schedule.trigger(), sweep(headers)]);
    assert.equal(manual.status, 200);
    assert.equal(manual.body.result.expired + manual.body.result.scanned >= 1, true);
    for (let i = 0; i < 100; i++) {
      if ((await db('kyc_applications').where({ id: app!.id }).first()).status === 'EXPIRED') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal((await db('kyc_applications').where({ id: app!.id }).first()).status, 'EXPIRED');
    const description = await schedule.describe();
    assert.ok(description.info.recentActions.length >= 1, 'the schedule started its fan-out');
  });
});

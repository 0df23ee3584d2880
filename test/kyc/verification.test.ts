import { strict as assert } from 'node:assert';
import { createHotReads } from '../../db/kyc/hot-reads';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { assertDeprecated, call } from '../support/http';
import {
  applicantHeaders,
  JPEG_BASE64,
  newApplicant,
  newApplication,
  settledStatus,
  simulatorControl,
} from '../support/kyc';

const verification = (id: string) => `/v1/kyc/applications/${id}/verification`;
const upload = (extra: Record<string, unknown> = {}) => ({
  channel: 'server_upload',
  id_type: 'IDENTITY_CARD',
  country: 'KE',
  id_number: '12345670',
  selfie: JPEG_BASE64,
  document_front: JPEG_BASE64,
  consent: true,
  ...extra,
});
const simulatorJob = async (userId: string) => {
  const jobs = (await (await simulatorControl('/jobs', 'GET')).json()) as {
    userId: string;
    received: Record<string, unknown>;
    apiVersion: string;
  }[];
  return jobs.find((job) => job.userId === userId);
};

const recordVerification = (applicationId: string, name: string) =>
  recordHistory(workflowIds.kycVerification(applicationId), name);

describe('spec 4.2: POST /v1/kyc/applications/{id}/verification, server_upload', () => {
  afterEach(async () => {
    await simulatorControl('/', 'PATCH', { callbacks: 'normal', holdJobs: false, failWith: 0, reviewMs: 200 });
  });

  it('answers 202 with the status shape in ID_VERIFICATION_PENDING; the provider callback completes it (v2)', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const reply = await call('POST', verification(id), { headers: await applicantHeaders(user), json: upload() });
    assert.equal(reply.status, 202, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['can_submit', 'id', 'message', 'needs_review', 'status']);
    assert.equal(reply.body.status, 'ID_VERIFICATION_PENDING');
    assert.equal(reply.body.can_submit, false);
    const settled = await settledStatus(user, id);
    assert.equal(settled.body.status, 'APPROVED');
    const job = await simulatorJob(user.id);
    assert.equal(job?.apiVersion, 'v2');
    assert.equal(job?.received.selfie, true);
    const row = await harness().db('kyc_applications').where({ id }).first();
    assert.equal(row.result_code, '0810');
    assert.match(row.provider_job_id, /^\d{10}$/);
    await recordVerification(id, 'kycVerification-server-upload-callbacks-are-triggers');
  });

  it('a verification run ends at its next wake once its application was settled elsewhere (as the expiry sweep does)', async function () {
    this.timeout(30_000);
    await simulatorControl('/', 'PATCH', { holdJobs: true });
    const user = await newApplicant();
    const id = await newApplication(user);
    const reply = await call('POST', verification(id), { headers: await applicantHeaders(user), json: upload() });
    assert.equal(reply.status, 202, reply.text);
    const handle = harness().client.workflow.getHandle(workflowIds.kycVerification(id));
    for (let i = 0; i < 100 && !(await simulatorJob(user.id)); i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    // What the sweep writes when the provider no longer knows the job.
    await harness()
      .db('kyc_applications')
      .where({ id })
      .update({ status: 'EXPIRED', reason: 'The provider no longer knows the job' });
    assert.equal(await handle.result(), 'CLOSED_BY_SWEEP');
    await recordVerification(id, 'kycVerification-closed-by-sweep-callbacks-are-triggers');
    assert.equal(
      (await harness().db('kyc_applications').where({ id }).first()).status,
      'EXPIRED',
      'the settled status stands',
    );
  });

  it('runs on v3 when negotiated, with the liveness frames (active check)', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = { ...(await applicantHeaders(user)), 'X-Provider-Api-Versions': 'v2,v3' };
    assert.equal((await call('GET', verification(id), { headers })).status, 200);
    const reply = await call('POST', verification(id), {
      headers,
      json: upload({ liveness_images: Array.from({ length: 6 }, () => JPEG_BASE64) }),
    });
    assert.equal(reply.status, 202, reply.text);
    assert.equal((await settledStatus(user, id)).body.status, 'APPROVED');
    const job = await simulatorJob(user.id);
    assert.equal(job?.apiVersion, 'v3');
    assert.equal(job?.received.livenessImages, 6);
    await recordVerification(id, 'kycVerification-server-upload-v3-status');
    // The v3 request carries who the applicant is, as the provider requires.
    assert.deepEqual(job?.received.userDetails, {
      given_names: 'Test',
      last_name: 'Applicant',
      email: user.email,
      phone_number: '+254700000000',
    });
  });

  it('a rejection completes as REJECTED and the applicant may submit again', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    await call('POST', verification(id), {
      headers: await applicantHeaders(user),
      json: upload({ id_number: '12345671' }),
    });
    const settled = await settledStatus(user, id);
    assert.equal(settled.body.status, 'REJECTED');
    assert.equal(settled.body.can_submit, true);
    const again = await call('POST', verification(id), { headers: await applicantHeaders(user), json: upload() });
    assert.equal(again.status, 202);
    assert.equal((await settledStatus(user, id)).body.status, 'APPROVED');
    assert.equal((await harness().db('kyc_applications').where({ id }).first()).resubmission_count, 1);
  });

  it('a client reads its own resubmission at once: the API forgets the status it kept, however late the change notification', async () => {
    const { db } = harness();
    const listeners = async () =>
      Number(
        (
          await db.raw(
            `select count(*) as n from pg_stat_activity
              where datname = current_database() and application_name = 'lending-service-status-changes'
                and query = 'listen kyc_application_changed'`,
          )
        ).rows[0].n,
      );
    const before = await listeners();
    const hotReads = createHotReads(db, 1);
    try {
      // Statuses are kept only while the instance listens for changes.
      while ((await listeners()) <= before) await new Promise((resolve) => setTimeout(resolve, 20));
      const user = await newApplicant();
      const id = await newApplication(user);
      const organization = user.organization_id;
      assert.equal((await hotReads.kycApplicationStatus(organization, id))?.status, 'DRAFT'); // now kept
      // A change whose notification never comes (triggers off for this transaction only): the
      // kept status stands until the instance that made the change forgets it.
      await db.transaction(async (trx) => {
        await trx.raw('set local session_replication_role = replica');
        await trx('kyc_applications').where({ id }).update({ status: 'ID_VERIFICATION_PENDING' });
      });
      assert.equal((await hotReads.kycApplicationStatus(organization, id))?.status, 'DRAFT');
      hotReads.forget(id);
      assert.equal((await hotReads.kycApplicationStatus(organization, id))?.status, 'ID_VERIFICATION_PENDING');
    } finally {
      await hotReads.close();
    }
  });

  it('human review: needs_review while the provisional result stands (confirmed by a signed lookup), then the final verdict', async () => {
    // The provisional callback is only a trigger: the run's lookup must find the review still on.
    await simulatorControl('/', 'PATCH', { reviewMs: 1_500 });
    const user = await newApplicant();
    const id = await newApplication(user);
    await call('POST', verification(id), {
      headers: await applicantHeaders(user),
      json: upload({ id_number: '12345674' }),
    });
    let sawReview = false;
    for (let i = 0; i < 100 && !sawReview; i++) {
      const row = await harness().db('kyc_applications').where({ id }).first();
      sawReview = row.needs_review === true;
      if (row.status !== 'ID_VERIFICATION_PENDING') break;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    assert.ok(sawReview, 'needs_review was set by the provisional result');
    const settled = await settledStatus(user, id);
    assert.equal(settled.body.status, 'APPROVED');
    assert.equal(settled.body.needs_review, false);
  });

  it('a lost callback: GET status recovers the stale provider state before answering', async () => {
    await simulatorControl('/', 'PATCH', { callbacks: 'lose' });
    const user = await newApplicant();
    const id = await newApplication(user);
    const started = Date.now();
    await call('POST', verification(id), { headers: await applicantHeaders(user), json: upload() });
    await new Promise((resolve) => setTimeout(resolve, 700)); // past KYC_STATUS_STALE_AFTER, short of KYC_CALLBACK_WAIT
    const reply = await call('GET', `/v1/kyc/applications/${id}/status`, { headers: await applicantHeaders(user) });
    assert.equal(reply.body.status, 'APPROVED');
    assert.ok(
      Date.now() - started < harness().config.KYC_CALLBACK_WAIT,
      'recovered by the status read, not by the timer',
    );
    assert.equal((await harness().db('kyc_callback_events').where({ application_id: id })).length, 0);
  });

  it('when the provider is down, GET status answers what is known within the recovery timeout', async () => {
    await simulatorControl('/', 'PATCH', { holdJobs: true });
    const user = await newApplicant();
    const id = await newApplication(user);
    await call('POST', verification(id), { headers: await applicantHeaders(user), json: upload() });
    await new Promise((resolve) => setTimeout(resolve, 700)); // stale
    await simulatorControl('/', 'PATCH', { failWith: 503 });
    try {
      const started = Date.now();
      const reply = await call('GET', `/v1/kyc/applications/${id}/status`, { headers: await applicantHeaders(user) });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.status, 'ID_VERIFICATION_PENDING');
      assert.ok(
        Date.now() - started < harness().config.KYC_STATUS_RECOVERY_TIMEOUT + 1_000,
        'bounded by the recovery timeout',
      );
    } finally {
      await simulatorControl('/', 'PATCH', { failWith: 0 });
    }
  });

  it('refuses every invalid field at once, in the validation shape', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = { ...(await applicantHeaders(user)), 'X-Provider-Api-Versions': 'v3' };
    await call('GET', verification(id), { headers });
    const reply = await call('POST', verification(id), {
      headers,
      json: upload({
        selfie: 'not base64!',
        document_front: Buffer.from('GIF89a....').toString('base64'),
        id_type: 'LIBRARY_CARD',
        consent: false,
        liveness_images: [JPEG_BASE64],
      }),
    });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.code, 'INVALID_PARAMS');
    const found = Object.fromEntries(
      reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
    );
    assert.deepEqual(found, {
      'body.selfie': 'INVALID_BASE64',
      'body.document_front': 'UNSUPPORTED_IMAGE_TYPE',
      'body.id_type': 'UNSUPPORTED_DOCUMENT',
      'body.consent': 'CONSENT_REQUIRED',
      'body.liveness_images': 'OUT_OF_RANGE',
    });
    assert.equal((await harness().db('kyc_applications').where({ id }).first()).status, 'DRAFT', 'nothing changed');
  });

  it('refuses an image over the size limit, an unknown channel and unknown fields', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = await applicantHeaders(user);
    const big = Buffer.alloc(harness().config.KYC_MAX_IMAGE_BYTES + 1, 0);
    big.set([0xff, 0xd8, 0xff]);
    const tooLarge = await call('POST', verification(id), {
      headers,
      json: upload({ selfie: big.toString('base64') }),
    });
    assert.equal(tooLarge.status, 400);
    assert.deepEqual(
      tooLarge.body.invalid_params.map((p: { sub_code: string }) => p.sub_code),
      ['IMAGE_TOO_LARGE'],
    );
    const channel = await call('POST', verification(id), { headers, json: { channel: 'carrier_pigeon' } });
    assert.deepEqual(
      channel.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      [['body.channel', 'INVALID_ENUM']],
    );
    const unknown = await call('POST', verification(id), { headers, json: upload({ favourite_colour: 'blue' }) });
    assert.deepEqual(
      unknown.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      [['body.favourite_colour', 'UNKNOWN_FIELD']],
    );
  });

  it('rejects the capture when GET and POST negotiate different provider API versions', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = await applicantHeaders(user);
    await call('GET', verification(id), { headers: { ...headers, 'X-Provider-Api-Versions': 'v3' } });
    const reply = await call('POST', verification(id), { headers, json: upload() });
    assert.equal(reply.status, 400);
    assert.deepEqual(
      reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      [['header.x-provider-api-versions', 'VERSION_MISMATCH']],
    );
  });

  it('spec 4.2: "Sending different values to GET and POST gets the capture rejected": the values sent are compared as sets, not the versions they negotiate', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = await applicantHeaders(user);
    const sent = (versions?: string) => ({
      ...headers,
      ...(versions === undefined ? {} : { 'X-Provider-Api-Versions': versions }),
    });
    const mismatch = (reply: Awaited<ReturnType<typeof call>>) => {
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.body.code, 'INVALID_PARAMS');
      assert.deepEqual(
        reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
        [['header.x-provider-api-versions', 'VERSION_MISMATCH']],
      );
    };
    assert.equal((await call('GET', verification(id), { headers: sent('v2') })).status, 200);
    // Both negotiate v2, yet the values differ: rejected, and so is the capture alias.
    mismatch(await call('POST', verification(id), { headers: sent('v2, v9'), json: upload() }));
    mismatch(
      await call('POST', `${verification(id)}/capture`, {
        headers: sent('v9,v2'),
        json: { ...upload(), channel: undefined },
      }),
    );
    // No header is no values, as an empty one is: not "v2".
    assert.equal((await call('GET', verification(id), { headers: sent() })).status, 200);
    mismatch(await call('POST', verification(id), { headers: sent('v2'), json: upload() }));
    assert.equal(
      (await harness().db('kyc_applications').where({ id }).first()).status,
      'DRAFT',
      'a rejected capture changes nothing',
    );
    // The same values in another order, spacing or case (and repeated) are the same set: accepted.
    assert.equal((await call('GET', verification(id), { headers: sent('v9, v2') })).status, 200);
    const accepted = await call('POST', verification(id), { headers: sent(' V2 ,v9,v2 '), json: upload() });
    assert.equal(accepted.status, 202, accepted.text);
  });

  it('a POST without a GET before it negotiates on its own', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = { ...(await applicantHeaders(user)), 'X-Provider-Api-Versions': 'v3' };
    const reply = await call('POST', verification(id), { headers, json: { channel: 'provider_sdk', consent: true } });
    assert.equal(reply.status, 201, reply.text);
    assert.equal(reply.body.config.api_version, 'v3');
  });

  it('a second submission while one is pending gets 409', async () => {
    await simulatorControl('/', 'PATCH', { holdJobs: true });
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = await applicantHeaders(user);
    assert.equal((await call('POST', verification(id), { headers, json: upload() })).status, 202);
    const again = await call('POST', verification(id), { headers, json: upload() });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'CONFLICT');
  });
});

describe('spec 4.2: provider_sdk (and legacy web_sdk), and reporting the provider job id', () => {
  async function startSdk(channel: 'provider_sdk' | 'web_sdk', versions?: string) {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = { ...(await applicantHeaders(user)), ...(versions ? { 'X-Provider-Api-Versions': versions } : {}) };
    const reply = await call('POST', verification(id), { headers, json: { channel } });
    return { user, id, headers, reply };
  }

  it('answers 201 with the provider session (token and pinned api_version); the application is pending', async () => {
    const { id, reply } = await startSdk('provider_sdk', 'v3, v2');
    assert.equal(reply.status, 201, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['application_id', 'config', 'provider']);
    assert.equal(reply.body.application_id, id);
    assert.equal(reply.body.config.api_version, 'v3');
    assert.ok(reply.body.config.token.length > 20);
    assert.equal((await harness().db('kyc_applications').where({ id }).first()).status, 'ID_VERIFICATION_PENDING');
    assert.equal(reply.headers.get('deprecation'), null);
  });

  it('web_sdk behaves as provider_sdk and is marked deprecated', async () => {
    const { reply } = await startSdk('web_sdk');
    assert.equal(reply.status, 201);
    assert.equal(reply.body.config.api_version, 'v2');
    assertDeprecated(reply);
  });

  it('the job id is write-once: the same id succeeds unchanged, a different one is 409, and after completion 409', async () => {
    const { user, id, headers, reply } = await startSdk('provider_sdk', 'v3');
    const submitted = (await (
      await simulatorControl('/sdk/submit', 'POST', { token: reply.body.config.token, id_number: '4440' })
    ).json()) as { job_id: string };
    const report = (jobId: string) =>
      call('PATCH', `${verification(id)}/provider-job`, { headers, json: { provider_job_id: jobId } });
    const first = await report(submitted.job_id);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { application_id: id, provider_job_id: submitted.job_id });
    assert.equal((await report(submitted.job_id)).status, 200, 'the same id again');
    const different = await report('job_SOMETHINGELSE000000000000');
    assert.equal(different.status, 409);
    assert.equal(different.body.code, 'CONFLICT');
    assert.equal((await settledStatus(user, id)).body.status, 'APPROVED');
    assert.equal((await report(submitted.job_id)).status, 409, 'no longer pending');
    await recordVerification(id, 'kycVerification-provider-sdk-callbacks-are-triggers');
  });
});

describe('spec 6: provider callbacks', () => {
  afterEach(async () => {
    await simulatorControl('/', 'PATCH', { callbacks: 'normal', holdJobs: false });
  });

  it('duplicates are recorded once and change nothing; forged and stale ones are refused with 401', async () => {
    await simulatorControl('/', 'PATCH', { holdJobs: true });
    const user = await newApplicant();
    const id = await newApplication(user);
    await call('POST', verification(id), { headers: await applicantHeaders(user), json: upload() });
    const { db } = harness();
    let job;
    for (let i = 0; i < 100 && !job; i++) {
      job = await simulatorJob(user.id);
      if (!job) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const smileJobId = (job as unknown as { smileJobId: string }).smileJobId;
    await simulatorControl(`/jobs/${smileJobId}/release`, 'POST');
    await settledStatus(user, id);
    for (const mode of ['duplicate', 'forge', 'stale'])
      await simulatorControl(`/jobs/${smileJobId}/callback`, 'POST', { mode });
    const events = await db('kyc_callback_events').where({ application_id: id });
    assert.equal(events.length, 1, 'the first callback and its duplicates are one event');
    assert.equal((await db('kyc_applications').where({ id }).first()).status, 'APPROVED');
  });

  it('answers a forged callback with 401 in the validation shape', async () => {
    const reply = await call('POST', '/v1/kyc/provider-callbacks/v2', {
      json: { ResultCode: '0810', signature: 'x', timestamp: new Date().toISOString() },
    });
    assert.equal(reply.status, 401);
    assert.equal(reply.body.code, 'UNAUTHORISED');
    assert.deepEqual(reply.body.invalid_params, []);
  });
});

describe('spec 4.2 and 9: deprecated aliases over the same engine', () => {
  it('POST capture takes a liveness selfie with frames (active check) and answers 202 with Deprecation', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const body = { ...upload({ liveness_images: [JPEG_BASE64, JPEG_BASE64] }) } as Record<string, unknown>;
    delete body.channel;
    const reply = await call('POST', `${verification(id)}/capture`, {
      headers: await applicantHeaders(user),
      json: body,
    });
    assert.equal(reply.status, 202, reply.text);
    assert.equal(reply.body.status, 'ID_VERIFICATION_PENDING');
    assertDeprecated(reply, `/v1/kyc/applications/${id}/verification`);
    assert.equal((await settledStatus(user, id)).body.status, 'APPROVED');
    assert.equal((await simulatorJob(user.id))?.received.livenessImages, 2);
  });

  it('POST capture with a lone selfie runs only the passive check', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const body = upload() as Record<string, unknown>;
    delete body.channel;
    assert.equal(
      (await call('POST', `${verification(id)}/capture`, { headers: await applicantHeaders(user), json: body })).status,
      202,
    );
    await settledStatus(user, id);
    assert.equal((await simulatorJob(user.id))?.received.livenessImages, 0);
  });

  it('spec 4.2 "a lone selfie gets only the passive check": the capture alias takes one on v3 too, its job run on v2 (the generation with the passive check) with no frames; the unified POST on v3 still asks for frames', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const body = upload() as Record<string, unknown>;
    delete body.channel;
    const headers = { ...(await applicantHeaders(user)), 'X-Provider-Api-Versions': 'v3' };
    const reply = await call('POST', `${verification(id)}/capture`, { headers, json: body });
    assert.equal(reply.status, 202, reply.text);
    assertDeprecated(reply, `/v1/kyc/applications/${id}/verification`);
    assert.equal((await settledStatus(user, id)).body.status, 'APPROVED');
    const job = await simulatorJob(user.id);
    assert.equal(job?.apiVersion, 'v2');
    assert.equal(job?.received.livenessImages, 0);
    const stored = await harness().db('kyc_applications').where({ id }).first('api_version');
    assert.equal(stored.api_version, 'v2', 'the job stays on the version it ran on');

    // Every other rule of the version negotiated still holds: v3's consent.
    const unconsenting = await newApplicant();
    const unconsentingId = await newApplication(unconsenting);
    const refused = await call('POST', `${verification(unconsentingId)}/capture`, {
      headers: { ...(await applicantHeaders(unconsenting)), 'X-Provider-Api-Versions': 'v3' },
      json: { ...body, consent: false },
    });
    assert.equal(refused.status, 400, refused.text);
    assert.deepEqual(
      refused.body.invalid_params.map((p: { path: string }) => p.path),
      ['body.consent'],
    );

    const other = await newApplicant();
    const otherId = await newApplication(other);
    const unified = await call('POST', verification(otherId), {
      headers: { ...(await applicantHeaders(other)), 'X-Provider-Api-Versions': 'v3' },
      json: upload(),
    });
    assert.equal(unified.status, 400, unified.text);
    assert.ok(
      unified.body.invalid_params.some((p: { path: string }) => p.path === 'body.liveness_images'),
      unified.text,
    );
  });

  it('POST session answers the provider session (201) with Deprecation', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const reply = await call('POST', `${verification(id)}/session`, {
      headers: await applicantHeaders(user),
      json: {},
    });
    assert.equal(reply.status, 201, reply.text);
    assert.ok(reply.body.config.token);
    assertDeprecated(reply, `/v1/kyc/applications/${id}/verification`);
  });

  it('the older GET capture form answers the requirements with Deprecation', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const reply = await call('GET', `${verification(id)}/capture`, { headers: await applicantHeaders(user) });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.requires_selfie, true);
    assertDeprecated(reply, `/v1/kyc/applications/${id}/verification`);
  });
});

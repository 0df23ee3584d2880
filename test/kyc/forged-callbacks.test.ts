import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { signV2 } from '../../providers/kyc/signature';
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

describe('attack run, finding 4: a forged v2 KYC callback changes nothing until a signed lookup confirms it', () => {
  it("a forged provisional callback with a recent signature pair neither flags the application for review nor sets its provider job id; the applicant's genuine report is then accepted", async () => {
    const { db, config } = harness();
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = await applicantHeaders(user);
    const started = await call('POST', `/v1/kyc/applications/${id}/verification`, {
      headers,
      json: { channel: 'provider_sdk', consent: true },
    });
    assert.equal(started.status, 201, started.text);
    assert.equal(started.body.config.api_version, 'v2');
    const application = await db('kyc_applications').where({ id }).first();

    // Any recent timestamp/signature pair fits any v2 body: the signature covers only those two.
    const timestamp = new Date().toISOString();
    const forged = {
      timestamp,
      signature: signV2(config.KYC_API_KEY!, config.KYC_PARTNER_ID!, timestamp),
      PartnerParams: { job_id: application.job_id, user_id: user.id, job_type: 11 },
      ResultCode: '0814',
      ResultText: 'Under Human Review',
      SmileJobID: '0000000666',
      IsFinalResult: 'false',
    };
    const reply = await call('POST', '/v1/kyc/provider-callbacks/v2', { json: forged });
    assert.equal(reply.status, 200);
    // The run took it as a trigger: it asked the provider, who has no submission for this job yet.
    await until(
      'the run asked the provider',
      async () => (await db('kyc_applications').where({ id }).first()).provider_checked_at !== null,
    );
    const after = await db('kyc_applications').where({ id }).first();
    assert.equal(after.needs_review, false, 'no review flag from an unconfirmed callback');
    assert.equal(after.provider_job_id, null, "the callback's SmileJobID is not taken");
    assert.equal(after.status, 'ID_VERIFICATION_PENDING');

    // The SDK submits; on v2 the provider's own job id is its SmileJobID.
    const submitted = (await (
      await simulatorControl('/sdk/submit', 'POST', { token: started.body.config.token, id_number: '4440' })
    ).json()) as { smile_job_id: string };
    assert.notEqual(submitted.smile_job_id, forged.SmileJobID);
    const report = await call('PATCH', `/v1/kyc/applications/${id}/verification/provider-job`, {
      headers,
      json: { provider_job_id: submitted.smile_job_id },
    });
    assert.equal(report.status, 200, `the genuine job id is accepted: ${report.text}`);
  });

  it("a forged v2 event naming one application cannot take another application's event id: the other's genuine callback is still taken", async () => {
    const { db, config } = harness();
    await simulatorControl('/', 'PATCH', { holdJobs: true });
    try {
      const [userA, userB] = [await newApplicant(), await newApplicant()];
      const [idA, idB] = [await newApplication(userA), await newApplication(userB)];
      const sdk = await call('POST', `/v1/kyc/applications/${idA}/verification`, {
        headers: await applicantHeaders(userA),
        json: { channel: 'provider_sdk', consent: true },
      });
      assert.equal(sdk.status, 201, sdk.text);
      const upload = {
        channel: 'server_upload',
        id_type: 'IDENTITY_CARD',
        selfie: JPEG_BASE64,
        document_front: JPEG_BASE64,
        consent: true,
      };
      assert.equal(
        (
          await call('POST', `/v1/kyc/applications/${idB}/verification`, {
            headers: await applicantHeaders(userB),
            json: upload,
          })
        ).status,
        202,
      );
      const jobB = await until('b at the provider', async () => {
        const jobs = (await (await simulatorControl('/jobs', 'GET')).json()) as {
          userId: string;
          smileJobId: string;
        }[];
        return jobs.find((job) => job.userId === userB.id);
      });
      const applicationA = await db('kyc_applications').where({ id: idA }).first();
      const timestamp = new Date().toISOString();
      const forged = {
        timestamp,
        signature: signV2(config.KYC_API_KEY!, config.KYC_PARTNER_ID!, timestamp),
        PartnerParams: { job_id: applicationA.job_id, user_id: userA.id, job_type: 11 },
        ResultCode: '0810',
        ResultText: 'Document Verified',
        SmileJobID: jobB.smileJobId,
        IsFinalResult: 'true',
      };
      assert.equal((await call('POST', '/v1/kyc/provider-callbacks/v2', { json: forged })).status, 200);
      await simulatorControl(`/jobs/${jobB.smileJobId}/release`, 'POST');
      await until(
        "b's genuine callback taken",
        async () => (await db('kyc_callback_events').where({ application_id: idB })).length === 1,
      );
      assert.equal((await settledStatus(userB, idB)).body.status, 'APPROVED');
      assert.equal(
        (await db('kyc_applications').where({ id: idA }).first()).status,
        'ID_VERIFICATION_PENDING',
        'a still awaits its own submission',
      );
    } finally {
      await simulatorControl('/', 'PATCH', { holdJobs: false });
    }
  });
});

describe('hostile review: v3 callbacks and reported jobs settle nothing that is not the applicant’s', () => {
  /** A v3 provider_sdk verification of a fresh applicant: its id, headers and session token. */
  async function v3Session() {
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = { ...(await applicantHeaders(user)), 'X-Provider-Api-Versions': 'v3' };
    assert.equal((await call('GET', `/v1/kyc/applications/${id}/verification`, { headers })).status, 200);
    const started = await call('POST', `/v1/kyc/applications/${id}/verification`, {
      headers,
      json: { channel: 'provider_sdk', consent: true },
    });
    assert.equal(started.status, 201, started.text);
    assert.equal(started.body.config.api_version, 'v3');
    return { user, id, headers, token: started.body.config.token as string };
  }
  const v3Signed = () => {
    const { config } = harness();
    const timestamp = new Date().toISOString();
    return {
      'response-timestamp': timestamp,
      'response-signature': signV2(config.KYC_API_KEY!, config.KYC_PARTNER_ID!, timestamp),
    };
  };

  it('reporting a v3 job another application holds is 409, and a job id that is not a TypeID is 400', async () => {
    const owner = await v3Session();
    const submitted = (await (
      await simulatorControl('/sdk/submit', 'POST', { token: owner.token, liveness_images: 6 })
    ).json()) as { job_id: string };
    const path = (id: string) => `/v1/kyc/applications/${id}/verification/provider-job`;
    assert.equal(
      (await call('PATCH', path(owner.id), { headers: owner.headers, json: { provider_job_id: submitted.job_id } }))
        .status,
      200,
    );
    const thief = await v3Session();
    const stolen = await call('PATCH', path(thief.id), {
      headers: thief.headers,
      json: { provider_job_id: submitted.job_id },
    });
    assert.equal(stolen.status, 409, stolen.text);
    const malformed = await call('PATCH', path(thief.id), {
      headers: thief.headers,
      json: { provider_job_id: 'job-0001' },
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.invalid_params[0].sub_code, 'INVALID_FORMAT');
  });

  it("a signed v3 callback naming another user's job, or a malformed job id, neither settles the application nor ends its run", async () => {
    const { db } = harness();
    const victim = await v3Session();
    const application = await db('kyc_applications').where({ id: victim.id }).first();
    const other = (await (
      await simulatorControl('/jobs', 'POST', {
        jobs: [{ job_id: randomUUID(), user_id: randomUUID(), api_version: 'v3', state: 'final', outcome: 'approve' }],
      })
    ).json()) as { jobs: { job_id: string }[] };
    for (const jobId of [other.jobs[0]!.job_id, 'job_NOT-A-TYPEID', '../../v1/upload']) {
      const reply = await call('POST', '/v1/kyc/provider-callbacks/v3', {
        headers: { ...v3Signed(), 'smileid-job-id': jobId, 'user-id': victim.user.id },
        json: { status: 'clear', partner_params: { lending_job_id: application.job_id } },
      });
      assert.equal(reply.status, 200, reply.text);
    }
    await until(
      'the run asked the provider',
      async () => (await db('kyc_applications').where({ id: victim.id }).first()).provider_checked_at !== null,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await db('kyc_applications').where({ id: victim.id }).first();
    assert.equal(after.status, 'ID_VERIFICATION_PENDING');
    assert.equal(after.provider_job_id, null, "another user's job is not recorded");
    const run = await harness().client.workflow.getHandle(`kyc-verification/${victim.id}`).describe();
    assert.equal(run.status.name, 'RUNNING', 'the run goes on');
  });

  it('a signed callback whose body holds objects where text belongs is taken (200), never a 500', async () => {
    const { config } = harness();
    const timestamp = new Date().toISOString();
    const v2 = await call('POST', '/v1/kyc/provider-callbacks/v2', {
      json: {
        timestamp,
        signature: signV2(config.KYC_API_KEY!, config.KYC_PARTNER_ID!, timestamp),
        SmileJobID: { toString: 1 },
        ResultCode: { toString: 1 },
        PartnerParams: [],
      },
    });
    assert.equal(v2.status, 200, v2.text);
    const v3 = await call('POST', '/v1/kyc/provider-callbacks/v3', {
      headers: v3Signed(),
      json: { status: { toString: 1 }, partner_params: 'x' },
    });
    assert.equal(v3.status, 200, v3.text);
  });
});

import { strict as assert } from 'node:assert';
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

import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { hashSecret } from '../../api/auth/secrets';
import { signV2 } from '../../providers/kyc/signature';
import {
  type Cell,
  type Exercise,
  type Fixture,
  type Instance,
  perMember,
  problem,
  row,
  type Rows,
} from './authorization-exercise';
import { type CallerKind, traits } from './authorization-matrix';
import { headersOf, type World } from './authorization-world';
import { harness } from './harness';
import { call } from './http';
import { JPEG_BASE64, simulatorControl } from './kyc';

// The matrix's exercises of the platform, auth and KYC routes (see authorization-exercise.ts).

/**
 * A platform API key names the organization it reads (spec 5.6: it may; without it the user's own
 * is read, which test/kyc/internal.test.ts covers); everyone else acts for its own.
 */
const namesOrganization = (kind: CallerKind) => traits(kind).credential === 'api_key' && !traits(kind).organization;
const organizationOf = (kind: CallerKind) => traits(kind).organization;

const SIMPLE: Exercise = {};

// ---------------------------------------------------------------------------------------------
// Platform and auth

const refresh: Exercise = {
  async prepare(world) {
    const session = async () => {
      const reply = await call('POST', '/v1/auth/sessions', { headers: await headersOf(world.people.customer) });
      assert.equal(reply.status, 201, reply.text);
      return reply.body.refresh_token as string;
    };
    const genuine = async (): Promise<Instance> => ({
      label: 'a refresh token it was issued',
      genuine: true,
      ids: { refresh_token: await session() },
      secrets: [],
    });
    return {
      targets: [
        await genuine(),
        { label: 'a refresh token never issued', ids: { refresh_token: randomBytes(32).toString('hex') }, secrets: [] },
      ],
      // Refresh tokens are single-use: every allowed call spends a session of its own.
      fresh: () => genuine(),
    };
  },
  request: ({ target }) => ({ json: { refresh_token: target!.ids.refresh_token } }),
  rows: (_target, _people, { world }) => [{ table: 'refresh_tokens', where: { user_id: world.people.customer.id } }],
  async done(_cell, reply) {
    const issued = await row('refresh_tokens', { token_hash: hashSecret(String(reply.body.refresh_token)) });
    return problem(issued !== undefined, 'no refresh token stored for the answer');
  },
};

const sessions: Exercise = {
  request: () => ({}),
  rows: (_target, people) => [{ table: 'refresh_tokens', where: { user_id: people } }],
  async done({ person }, reply) {
    const issued = await row('refresh_tokens', { token_hash: hashSecret(String(reply.body.refresh_token)) });
    return problem(issued?.user_id === person?.id, "the session is not the caller's");
  },
};

const whoami: Exercise = {
  request: () => ({}),
  shows({ kind, person }, reply, { world }) {
    const organization = organizationOf(kind);
    if (reply.body.organization_id !== (organization ? world.organizations[organization] : null))
      return `organization_id ${reply.body.organization_id}`;
    return problem(!person || reply.body.user_id === person.id, `user_id ${reply.body.user_id}`);
  },
};

// ---------------------------------------------------------------------------------------------
// KYC

const sweep: Exercise = {
  request: () => ({}),
  // What a sweep changes: the organizations' applications (none pending yet when it runs).
  rows: (_target, _people, { world }) => [
    {
      table: 'kyc_applications',
      where: { organization_id: Object.values(world.organizations) },
      columns: ['id', 'status'],
    },
  ],
  async done({ kind }, reply, { world }) {
    const organization = organizationOf(kind);
    return problem(
      organization !== undefined && reply.body.organization_id === world.organizations[organization],
      `swept ${reply.body.organization_id}`,
    );
  },
};

const kycTargets = async (world: World, fresh = false): Promise<Fixture> => {
  const house = fresh ? await world.freshKycHousehold() : await world.kycHousehold();
  return {
    subject: house.customer.person,
    targets: perMember(
      house,
      (m) => ({ id: m.applicationId, user_id: m.person.id }),
      (m) => [m.jobId],
    ),
  };
};
const kycApplicationRows =
  (columns: string[]) =>
  (target: Instance | undefined): Rows[] => [
    { table: 'kyc_applications', where: { id: target!.ids.id! }, columns },
    { table: 'kyc_documents', where: { application_id: target!.ids.id! }, columns: ['id'] },
  ];

/**
 * Subject details answer only a provisioned subject (the latest application APPROVED, a complete
 * identity): a household of its own, since the KYC household's applications are DRAFTs for the
 * submissions.
 */
const provisionedTargets = async (world: World): Promise<Fixture> => {
  const [customer, peer, foreign] = await Promise.all([
    world.provisioned('own'),
    world.provisioned('own'),
    world.provisioned('other'),
  ]);
  return {
    subject: customer.person,
    targets: perMember({ customer, peer, foreign }, (m) => ({ user_id: m.person.id })),
  };
};

const lookup = (path: 'status' | 'subjects'): Exercise => ({
  prepare: (world) => (path === 'status' ? kycTargets(world) : provisionedTargets(world)),
  request: ({ kind, target }, { world }) => {
    const organization = namesOrganization(kind)
      ? { organization_id: world.organizations[target!.organization!] }
      : undefined;
    return path === 'status'
      ? { query: { user_id: target!.ids.user_id!, ...organization } }
      : { params: { user_id: target!.ids.user_id! }, query: organization };
  },
  shows: ({ target }, reply) => problem(reply.body.user_id === target!.ids.user_id, `user_id ${reply.body.user_id}`),
});

const createKyc: Exercise = {
  prepare: async (world) => ({ subject: await world.newPerson('own', 'CUSTOMER'), targets: [] }),
  request: () => ({}),
  rows: (_target, people) => [{ table: 'kyc_applications', where: { user_id: people }, columns: ['id', 'status'] }],
  async done({ person }, reply) {
    const created = await row('kyc_applications', { id: reply.body.id });
    return problem(created?.user_id === person?.id, "the application is not the caller's");
  },
};

const requirements: Exercise = {
  prepare: (world) => kycTargets(world),
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  rows: kycApplicationRows(['status', 'negotiated_api_version', 'sent_api_versions', 'channel']),
  async done({ target }) {
    const application = await row('kyc_applications', { id: target!.ids.id });
    return problem(application?.negotiated_api_version === 'v2', 'the negotiated version is not recorded');
  },
};

const submitted =
  (channel: string) =>
  async ({ target }: Cell): Promise<string | undefined> => {
    const application = await row('kyc_applications', { id: target!.ids.id });
    return problem(
      application?.status !== 'DRAFT' && application?.channel === channel,
      `the application is ${application?.status} (${application?.channel})`,
    );
  };
const SERVER_UPLOAD = {
  id_type: 'IDENTITY_CARD',
  id_number: '12345670',
  selfie: JPEG_BASE64,
  document_front: JPEG_BASE64,
  consent: true,
};
const submission = (body: unknown, channel: string): Exercise => ({
  prepare: (world) => kycTargets(world, true),
  request: ({ target }) => ({ params: { id: target!.ids.id! }, json: body }),
  rows: kycApplicationRows(['status', 'channel', 'submitted_at']),
  done: submitted(channel),
});

/**
 * The customer's verification pending on a provider_sdk job the provider holds as processing: the
 * scheduled sweep then leaves it pending (a job the provider does not know is expired), so it is
 * still pending when the allowed call reports its job id. Released once the route is done.
 */
const providerJob: Exercise = {
  async prepare(world) {
    const fixture = await kycTargets(world, true);
    const hold = (holdJobs: boolean) => simulatorControl('/', 'PATCH', { holdJobs });
    await hold(true);
    const started = await call('POST', `/v1/kyc/applications/${fixture.targets[0]!.ids.id}/verification`, {
      headers: await headersOf(fixture.subject!),
      json: { channel: 'provider_sdk', consent: true },
    }).finally(() => hold(false));
    assert.equal(started.status, 201, started.text);
    const submitted = await simulatorControl('/sdk/submit', 'POST', {
      token: started.body.config.token,
      id_number: '12345670',
    });
    assert.equal(submitted.status, 200, await submitted.clone().text());
    const { smile_job_id: held } = (await submitted.json()) as { smile_job_id: string };
    return {
      ...fixture,
      targets: fixture.targets.map((t) => ({ ...t, ids: { ...t.ids, job: `matrix-${randomUUID()}` } })),
      cleanup: async () => void (await simulatorControl(`/jobs/${held}/release`, 'POST')),
    };
  },
  request: ({ target }) => ({ params: { id: target!.ids.id! }, json: { provider_job_id: target!.ids.job } }),
  rows: kycApplicationRows(['status', 'provider_job_id']),
  async done({ target }) {
    const application = await row('kyc_applications', { id: target!.ids.id });
    return problem(application?.provider_job_id === target!.ids.job, 'the job id is not recorded');
  },
};

const kycStatus: Exercise = {
  prepare: (world) => kycTargets(world),
  request: ({ target }) => ({ params: { id: target!.ids.id! } }),
  shows: ({ target }, reply) => problem(reply.body.id === target!.ids.id, `id ${reply.body.id}`),
};

/** A provider callback naming the customer's application, signed with the provider's key or not. */
const kycCallback = (version: 'v2' | 'v3'): Exercise => ({
  async prepare(world) {
    const { customer } = await world.kycHousehold();
    const { config } = harness();
    const sign = (key: string) => {
      const timestamp = new Date().toISOString();
      return { timestamp, signature: signV2(key, config.KYC_PARTNER_ID!, timestamp) };
    };
    const instance = (genuine: boolean): Instance => {
      const { timestamp, signature } = sign(genuine ? config.KYC_API_KEY! : 'not-the-provider-key');
      return {
        label: genuine ? 'signed by the provider' : 'signed with another key',
        genuine,
        ids: { applicationId: customer.applicationId, jobId: customer.jobId, timestamp, signature },
        secrets: [],
      };
    };
    return { targets: [instance(true), instance(false)] };
  },
  request: ({ target }) => {
    const { jobId, timestamp, signature } = target!.ids as Record<string, string>;
    return version === 'v2'
      ? {
          json: {
            timestamp,
            signature,
            PartnerParams: { job_id: jobId, job_type: 11 },
            ResultCode: '1012',
            ResultText: 'Valid ID',
            SmileJobID: '0000000001',
            IsFinalResult: 'true',
          },
        }
      : {
          headers: { 'response-timestamp': timestamp!, 'response-signature': signature! },
          json: { partner_params: { lending_job_id: jobId }, status: 'clear' },
        };
  },
  rows: (target) => [{ table: 'kyc_callback_events', where: { application_id: target!.ids.applicationId! } }],
  async done({ target }) {
    const stored = await row('kyc_callback_events', { application_id: target!.ids.applicationId });
    return problem(stored !== undefined, 'the callback is not recorded');
  },
});

const DOCS_ASSET = 'favicon-32x32.png';

export const IDENTITY_EXERCISES: Record<string, Exercise> = {
  'GET /healthz': SIMPLE,
  'GET /readyz': SIMPLE,
  'GET /metrics': SIMPLE,
  'GET /openapi.json': SIMPLE,
  'GET /docs': SIMPLE,
  'GET /docs/assets/{asset}': { request: () => ({ params: { asset: DOCS_ASSET } }) },
  'GET /.well-known/jwks.json': SIMPLE,
  'POST /v1/auth/exchange': { request: () => ({ json: {} }) },
  'POST /v1/auth/refresh': refresh,
  'POST /v1/auth/sessions': sessions,
  'GET /v1/auth/whoami': whoami,

  'POST /v1/internal/kyc/applications/expirations': sweep,
  'POST /api/internal/kyc/applications/expirations': sweep,
  'GET /v1/internal/kyc/status': lookup('status'),
  'GET /api/internal/kyc/status': lookup('status'),
  'GET /v1/internal/kyc/subjects/{user_id}': lookup('subjects'),
  'GET /api/internal/kyc/subjects/{user_id}': lookup('subjects'),
  'POST /v1/kyc/applications': createKyc,
  'GET /v1/kyc/applications/{id}/verification': requirements,
  'GET /v1/kyc/applications/{id}/verification/capture': requirements,
  'POST /v1/kyc/applications/{id}/verification': submission(
    { channel: 'server_upload', ...SERVER_UPLOAD },
    'server_upload',
  ),
  'POST /v1/kyc/applications/{id}/verification/capture': submission(SERVER_UPLOAD, 'server_upload'),
  'POST /v1/kyc/applications/{id}/verification/session': submission({ consent: true }, 'provider_sdk'),
  'PATCH /v1/kyc/applications/{id}/verification/provider-job': providerJob,
  'GET /v1/kyc/applications/{id}/status': kycStatus,
  'POST /v1/kyc/provider-callbacks/v2': kycCallback('v2'),
  'POST /v1/kyc/provider-callbacks/v3': kycCallback('v3'),
};

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call, rawCall as raw, type Reply } from '../support/http';
import { applicantHeaders, newApplicant, newApplication, simulatorControl } from '../support/kyc';
import { callbacksRecorded, newCustomer, pushAccepted, transactionRow } from '../support/money';
import { backendToken, bearer } from '../support/tokens';

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const subCodes = (reply: Reply) => (reply.body?.invalid_params ?? []).map((p: { sub_code: string }) => p.sub_code);

describe('attack run, finding 3: input Postgres or the parser cannot take is refused with 400 at the edge, in the route family, before any handler', () => {
  it('a NUL or a lone surrogate in a path segment of the mobile-money callback routes is 400, not 500', async () => {
    for (const segment of ['%00', 'a%00b', '%ED%A0%80']) {
      const reply = await raw('POST', `/v1/transactions/mobilemoney/callbacks/stk/${segment}/token`, '{}');
      assert.equal(reply.status, 400, `${segment}: ${reply.text}`);
      assert.equal(reply.body.code, 'BAD_REQUEST');
      assert.match(reply.body.description, /NUL|UTF-8/);
    }
  });

  it('a NUL, a lone surrogate or nesting past 32 levels in a callback body is 400 before the handler, and nothing is stored', async () => {
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 10_000 });
    const row = await transactionRow(created.id);
    const path = `/v1/transactions/mobilemoney/callbacks/stk/${row.id}/${row.callback_token}`;
    const bodies = {
      nul: '{"Body":{"stkCallback":{"ResultDesc":"a\\u0000b"}}}',
      surrogate: '{"Body":{"stkCallback":{"ResultDesc":"\\ud800"}}}',
      'surrogate key': '{"\\udc00":1}',
      nesting: `{"Body":${nested(4_600)}}`,
    };
    for (const [name, body] of Object.entries(bodies)) {
      const reply = await raw('POST', path, body);
      assert.equal(reply.status, 400, `${name}: ${reply.text}`);
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description'], name);
    }
    const before = (await callbacksRecorded(created.id)).filter(
      (r) => r.raw.includes('\\u0000') || r.raw.includes('\\ud800') || r.raw.startsWith('{"Body":[['),
    );
    assert.deepEqual(before, [], 'none of them reached storage');
  });

  it('validation-family routes name the field and the sub_code: INVALID_CHARACTERS at its JSON path (or bytes that are not UTF-8), TOO_DEEP for the body, TOO_LONG for an over-long path segment', async () => {
    const headers = await applicantHeaders(await newApplicant());
    const nul = await raw(
      'POST',
      `/v1/kyc/applications/${randomUUID()}/verification`,
      '{"channel":"provider_sdk","consent":true,"x":["ok","a\\u0000"]}',
      headers,
    );
    assert.equal(nul.status, 400);
    assert.deepEqual(nul.body.invalid_params, [
      { path: 'body.x.1', reason: 'contains a NUL character', sub_code: 'INVALID_CHARACTERS' },
    ]);
    const deep = await raw('POST', `/v1/kyc/applications/${randomUUID()}/verification`, nested(40), headers);
    assert.deepEqual(subCodes(deep), ['TOO_DEEP']);
    const long = await raw('GET', `/v1/kyc/applications/${'a'.repeat(1_100)}/status`, undefined, headers);
    assert.equal(long.status, 400);
    assert.deepEqual(subCodes(long), ['TOO_LONG']);
    const badUtf8 = await raw(
      'PATCH',
      `/v1/kyc/applications/${randomUUID()}/verification/provider-job`,
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
      headers,
    );
    assert.deepEqual(badUtf8.body.invalid_params, [
      { path: 'body', reason: 'not UTF-8', sub_code: 'INVALID_CHARACTERS' },
    ]);
  });

  it("a NUL in provider_job_id is refused 400 at once, and the applicant's real job id is then accepted (nothing half-stored)", async () => {
    await simulatorControl('/', 'PATCH', { callbacks: 'lose' });
    try {
      const user = await newApplicant();
      const id = await newApplication(user);
      const headers = await applicantHeaders(user);
      const started = await call('POST', `/v1/kyc/applications/${id}/verification`, {
        headers,
        json: { channel: 'provider_sdk', consent: true },
      });
      assert.equal(started.status, 201, started.text);
      const path = `/v1/kyc/applications/${id}/verification/provider-job`;
      const began = Date.now();
      const refused = await raw('PATCH', path, '{"provider_job_id":"1234\\u000056"}', headers);
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.invalid_params, [
        { path: 'body.provider_job_id', reason: 'contains a NUL character', sub_code: 'INVALID_CHARACTERS' },
      ]);
      assert.ok(Date.now() - began < 2_000, 'refused at the edge, not after a workflow step retried');
      const submitted = (await (
        await simulatorControl('/sdk/submit', 'POST', { token: started.body.config.token, id_number: '4440' })
      ).json()) as { job_id: string };
      const accepted = await call('PATCH', path, { headers, json: { provider_job_id: submitted.job_id } });
      assert.equal(accepted.status, 200, accepted.text);
      assert.equal((await harness().db('kyc_applications').where({ id }).first()).provider_job_id, submitted.job_id);
    } finally {
      await simulatorControl('/', 'PATCH', { callbacks: 'normal' });
    }
  });

  it("a NUL in an unverified JWT's iss at POST /v1/auth/exchange is 401, never 500 (no unverified claim reaches a query)", async () => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const iss of ['partner\u0000', '\ud800', 'x'.repeat(5_000)]) {
      const token = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iss, sub: 'p', aud: 'x', exp: 9_999_999_999, iat: 1 })}.c2ln`;
      const reply = await call('POST', '/v1/auth/exchange', { headers: bearer(token), json: {} });
      assert.equal(reply.status, 401, reply.text);
      assert.deepEqual(reply.body, { code: 'UNAUTHORISED', description: 'Unauthorised' });
    }
  });

  it("a NUL in organization_id on the internal KYC lookups is 400; a NUL in a verified token's sub is 401", async () => {
    const ops = bearer(await backendToken(DEMO.users.internal.id));
    for (const path of ['/v1/internal/kyc/status', '/api/internal/kyc/status']) {
      const reply = await raw('GET', `${path}?user_id=${DEMO.users.customer.id}&organization_id=%00`, undefined, ops);
      assert.equal(reply.status, 400, reply.text);
      assert.deepEqual(subCodes(reply), ['INVALID_CHARACTERS']);
    }
    const subject = await call('GET', '/v1/auth/whoami', { headers: bearer(await backendToken('user\u0000id')) });
    assert.equal(subject.status, 401, subject.text);
    assert.ok(subject.headers.get('www-authenticate'));
  });
});

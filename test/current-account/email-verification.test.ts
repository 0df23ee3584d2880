import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../workflows/ids';
import { emailControl, emailsTo } from '../support/current-account';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { newCustomer, until } from '../support/money';

const start = (headers: Record<string, string>) =>
  call('POST', '/v1/user/accounts/current/email/verifications', { headers });
const read = (headers: Record<string, string>, id: string) =>
  call('GET', `/v1/user/accounts/current/email/verifications/${id}`, { headers });
const confirm = (headers: Record<string, string>, id: string, token: string) =>
  call('POST', `/v1/user/accounts/current/email/verifications/${id}/confirm`, { headers, json: { token } });

/** The link e-mailed for verification `id`, and its token. */
async function linkFor(address: string, id: string) {
  const mails = await until('the link e-mailed', async () => {
    const sent = await emailsTo(address);
    return sent.length > 0 ? sent : undefined;
  });
  const link = new RegExp(`https?://\\S+/email/verifications/${id}/confirm\\?token=([A-Za-z0-9_-]{43})`).exec(
    mails.at(-1)!.text ?? '',
  );
  assert.ok(link, 'the e-mail carries the confirm link with its token');
  return { url: link[0], token: link[1]! };
}

const sentState = async (headers: Record<string, string>, id: string) =>
  until('SENT', async () => {
    const reply = await read(headers, id);
    return reply.body.status === 'SENT' ? reply.body : undefined;
  });

describe('spec 4.7: e-mail verification by a single-use link (email-verification/<id>)', () => {
  afterEach(() => emailControl('/mode', 'PATCH', { send: 'normal' }));

  it('INITIALIZING, SENT with a link (url, confirm_url), then the token confirms it: VERIFIED with verified_at, the user’s e-mail verified; the token works once', async () => {
    const customer = await newCustomer(0, { stage: 'new' });
    const started = await start(customer.headers);
    assert.equal(started.status, 201, JSON.stringify(started.body));
    assert.equal(started.body.status, 'INITIALIZING');
    const id = started.body.id as string;
    assert.match(started.body.resource_id, /^emv_[0-9a-f]{32}$/);
    assert.ok(started.body.url.endsWith(`/v1/user/accounts/current/email/verifications/${id}`));
    assert.ok(started.body.confirm_url.endsWith(`/v1/user/accounts/current/email/verifications/${id}/confirm`));
    const { url, token } = await linkFor(customer.user.email, id);
    assert.ok(url.startsWith(started.body.confirm_url));
    const sent = await sentState(customer.headers, id);
    assert.ok(sent.expires_at);
    const stored = await harness().db('email_verifications').where({ id }).first('token_hash');
    assert.ok(stored.token_hash, 'the token is kept hashed');
    assert.notEqual(Buffer.from(stored.token_hash).toString('utf8'), token);

    const confirmed = await confirm(customer.headers, id, token);
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.equal(confirmed.body.status, 'VERIFIED');
    assert.ok(confirmed.body.verified_at);
    const user = await harness().db('users').where({ id: customer.user.id }).first('email_verified_at');
    assert.ok(user.email_verified_at);
    assert.equal((await harness().db('email_verifications').where({ id }).first('token_hash')).token_hash, null);
    const again = await confirm(customer.headers, id, token);
    assert.equal(again.status, 400, 'single use');
    assert.equal((await start(customer.headers)).status, 400, 'already verified');
    await recordHistory(workflowIds.emailVerification(id), 'emailVerification-verified');
  });

  it('a wrong token counts; the last wrong one FAILS the verification (TOO_MANY_ATTEMPTS); a malformed token is refused before it counts', async () => {
    const customer = await newCustomer(0, { stage: 'new' });
    const id = (await start(customer.headers)).body.id as string;
    const { token } = await linkFor(customer.user.email, id);
    await sentState(customer.headers, id);
    assert.equal((await confirm(customer.headers, id, 'short')).status, 400);
    const other = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const max = harness().config.OTP_MAX_ATTEMPTS;
    for (let left = max - 1; left > 0; left -= 1)
      assert.match((await confirm(customer.headers, id, other)).body.description, new RegExp(`${left} attempts? left`));
    assert.equal((await confirm(customer.headers, id, other)).status, 429);
    const failed = await read(customer.headers, id);
    assert.equal(failed.body.status, 'FAILED');
    assert.equal(failed.body.failure_reason, 'TOO_MANY_ATTEMPTS');
    assert.equal((await confirm(customer.headers, id, token)).status, 400);
  });

  it('links expire: unused in time, EXPIRED by the run’s timer, and the token no longer works', async function () {
    this.timeout(40_000);
    const customer = await newCustomer(0, { stage: 'new' });
    const id = (await start(customer.headers)).body.id as string;
    const { token } = await linkFor(customer.user.email, id);
    const expired = await until(
      'EXPIRED',
      async () => {
        const reply = await read(customer.headers, id);
        return reply.body.status === 'EXPIRED' ? reply.body : undefined;
      },
      harness().config.EMAIL_VERIFICATION_TTL + 10_000,
    );
    assert.equal(expired.verified_at, null);
    assert.equal((await confirm(customer.headers, id, token)).status, 400);
    await recordHistory(workflowIds.emailVerification(id), 'emailVerification-expired');
  });

  it('an e-mail provider that keeps failing: FAILED (EMAIL_NOT_SENT) after its retries', async function () {
    this.timeout(60_000);
    const customer = await newCustomer(0, { stage: 'new' });
    await emailControl('/mode', 'PATCH', { send: 'error' });
    const id = (await start(customer.headers)).body.id as string;
    const failed = await until(
      'FAILED',
      async () => {
        const reply = await read(customer.headers, id);
        return reply.body.status === 'FAILED' ? reply.body : undefined;
      },
      45_000,
      250,
    );
    assert.equal(failed.failure_reason, 'EMAIL_NOT_SENT');
  });

  it('another user’s verification is 404, as is an unknown id; a path id that is not a uuid is 400', async () => {
    const [customer, other] = await Promise.all([newCustomer(0, { stage: 'new' }), newCustomer(0, { stage: 'new' })]);
    const id = (await start(customer.headers)).body.id as string;
    const { token } = await linkFor(customer.user.email, id);
    assert.equal((await read(other.headers, id)).status, 404);
    assert.equal((await confirm(other.headers, id, token)).status, 404);
    assert.equal((await read(customer.headers, randomUUID())).status, 404);
    const bad = await read(customer.headers, 'not-a-uuid');
    assert.equal(bad.status, 400);
    assert.deepEqual(Object.keys(bad.body).sort(), ['code', 'description']);
  });
});

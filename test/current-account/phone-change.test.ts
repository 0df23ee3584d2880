import { strict as assert } from 'node:assert';
import { randomInt, randomUUID } from 'node:crypto';
import { claimNumberForBank } from '../../db/current-account/phone-change';
import { workflowIds } from '../../workflows/ids';
import { activatedCustomer, bankControl, codeEmailedTo, codeSentTo, textsTo, wrong } from '../support/current-account';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { newCustomer, until } from '../support/money';

type Headers = Record<string, string>;
const request = (headers: Headers, body: Record<string, unknown>) =>
  call('POST', '/v1/user/accounts/current/phone/changes', { headers, json: body });
const read = (headers: Headers, id: string) =>
  call('GET', `/v1/user/accounts/current/phone/changes/${id}`, { headers });
const step = (headers: Headers, id: string, which: 'authorize' | 'confirm', otp_code: string) =>
  call('POST', `/v1/user/accounts/current/phone/changes/${id}/${which}`, { headers, json: { otp_code } });

/** A Kenyan mobile nobody holds: its national digits and its E.164 form. */
function freshNumber() {
  const national = `7${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
  return { national, e164: `+254${national}` };
}
const phoneOf = async (userId: string) =>
  (await harness().db('users').where({ id: userId }).first('phone_number')).phone_number as string;
const changeWhen = (headers: Headers, id: string, status: string, timeoutMs = 20_000) =>
  until(
    `change ${status}`,
    async () => {
      const reply = await read(headers, id);
      return reply.body.status === status ? reply.body : undefined;
    },
    timeoutMs,
  );

describe('spec 4.7: mobile-number change (phone-change/<id>): the owner authorizes, the new number proves itself, the bank changes it', () => {
  afterEach(() => bankControl('/mode', 'PATCH', { mobileChange: 'approve', decisionDelayMs: 100 }));

  it('OLD_MOBILE: authorized by a code to the old mobile, confirmed by a code to the new one; the phone changes only at completion, with the bank’s confirmation', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const number = freshNumber();
    const created = await request(customer.headers, {
      new_mobile_country_code: '254',
      new_mobile_number: `0${number.national}`,
      authorization_channel: 'OLD_MOBILE',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.status, 'INITIALIZING');
    assert.equal(created.body.authorization_channel, 'OLD_MOBILE');
    assert.match(created.body.resource_id, /^mnc_[0-9a-f]{32}$/);
    const id = created.body.id as string;
    assert.ok(created.body.authorize_url.endsWith(`/phone/changes/${id}/authorize`));
    assert.ok(created.body.confirm_url.endsWith(`/phone/changes/${id}/confirm`));

    // The activation's code was the first text to the old mobile; the authorization code is the second.
    const authorization = await codeSentTo(customer.phone, 2);
    await changeWhen(customer.headers, id, 'AWAITING_AUTHORIZATION');
    const early = await step(customer.headers, id, 'confirm', authorization);
    assert.equal(early.status, 400, 'the new number cannot be confirmed before the owner authorized');
    const authorized = await step(customer.headers, id, 'authorize', authorization);
    assert.equal(authorized.status, 200, JSON.stringify(authorized.body));
    assert.equal(authorized.body.status, 'AWAITING_CONFIRMATION');
    assert.ok(authorized.body.authorized_at);

    await bankControl('/mode', 'PATCH', {
      mobileChange: 'pending',
      decisionDelayMs: 1_500,
      pendingDecision: 'approve',
    });
    const confirmation = await codeSentTo(number.e164);
    assert.equal(await phoneOf(customer.user.id), customer.phone, 'unchanged before completion');
    const confirmed = await step(customer.headers, id, 'confirm', confirmation);
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.equal(confirmed.body.status, 'PROCESSING');
    assert.equal(await phoneOf(customer.user.id), customer.phone, 'unchanged while the bank decides');
    const done = await changeWhen(customer.headers, id, 'COMPLETED');
    assert.ok(done.completed_at);
    assert.equal(await phoneOf(customer.user.id), number.e164);
    const changes =
      await bankControl<{ partnerReference: string; newMobileNumber: string; status: string }[]>(
        '/mobile-number-changes',
      );
    const atBank = changes.filter((c) => c.partnerReference === id);
    assert.equal(atBank.length, 1);
    assert.equal(atBank[0]!.newMobileNumber, number.e164);
    await recordHistory(workflowIds.phoneChange(id), 'phoneChange-completed');
  });

  it('EMAIL: refused while the e-mail is unverified; once verified, the owner’s code goes by e-mail', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const number = freshNumber();
    const body = { new_mobile_country_code: '254', new_mobile_number: number.national, authorization_channel: 'EMAIL' };
    const refused = await request(customer.headers, body);
    assert.equal(refused.status, 400);
    assert.match(refused.body.description, /Verify your e-mail/);
    await harness().db('users').where({ id: customer.user.id }).update({ email_verified_at: new Date() });
    const created = await request(customer.headers, body);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const authorization = await codeEmailedTo(customer.user.email);
    assert.equal((await textsTo(customer.phone)).length, 1, 'only the activation code went to the old mobile');
    assert.equal((await step(customer.headers, id, 'authorize', authorization)).status, 200);
    assert.equal((await step(customer.headers, id, 'confirm', await codeSentTo(number.e164))).status, 200);
    await changeWhen(customer.headers, id, 'COMPLETED');
    assert.equal(await phoneOf(customer.user.id), number.e164);
  });

  it('a number another user holds is answered at request time as a free one; the change ends REJECTED NUMBER_TAKEN before the bank, naming nobody', async function () {
    this.timeout(90_000);
    const [customer, other, holder] = await Promise.all([activatedCustomer(), activatedCustomer(), newCustomer(0)]);
    const free = freshNumber();
    const asked = (headers: Headers, national: string) =>
      request(headers, {
        new_mobile_country_code: '254',
        new_mobile_number: national,
        authorization_channel: 'OLD_MOBILE',
      });
    const [held, fresh] = await Promise.all([
      asked(customer.headers, holder.phone.slice(4)),
      asked(other.headers, free.national),
    ]);
    assert.equal(held.status, 201, held.text);
    assert.equal(fresh.status, 201, fresh.text);
    const shape = (body: Record<string, unknown>) =>
      Object.entries(body)
        .filter(
          ([key]) =>
            !['id', 'resource_id', 'created_at', 'updated_at', 'new_phone_number', 'old_phone_number'].includes(key),
        )
        .map(([key, value]) => [key, value === null ? null : typeof value]);
    assert.deepEqual(shape(held.body), shape(fresh.body), 'the same answer for a held and a free number');
    // Another user's open change of the same number does not tell either.
    const third = await activatedCustomer();
    const same = await asked(third.headers, free.national);
    assert.equal(same.status, 201, same.text);

    const id = held.body.id as string;
    assert.equal((await step(customer.headers, id, 'authorize', await codeSentTo(customer.phone, 2))).status, 200);
    // The holder's phone had its activation code; the change's code to it is the second text.
    assert.equal((await step(customer.headers, id, 'confirm', await codeSentTo(holder.phone, 2))).status, 200);
    const rejected = await changeWhen(customer.headers, id, 'REJECTED');
    assert.equal(rejected.rejection_reason, 'NUMBER_TAKEN');
    assert.doesNotMatch(JSON.stringify(rejected), new RegExp(holder.user.id), 'the holder is not named');
    assert.equal(await phoneOf(customer.user.id), customer.phone);
    assert.equal(await phoneOf(holder.user.id), holder.phone, "the holder's number stays theirs");
  });

  it('two users proving one new number: only the first reaches the bank; the second ends REJECTED NUMBER_TAKEN before it', async function () {
    this.timeout(90_000);
    const [first, second] = await Promise.all([activatedCustomer(), activatedCustomer()]);
    const number = freshNumber();
    const asked = (headers: Headers) =>
      request(headers, {
        new_mobile_country_code: '254',
        new_mobile_number: number.national,
        authorization_channel: 'OLD_MOBILE',
      });
    const [a, b] = await Promise.all([asked(first.headers), asked(second.headers)]);
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    const [aId, bId] = [a.body.id as string, b.body.id as string];
    // Each owner authorizes; each change's code to the new number follows (the first's, then the second's).
    assert.equal((await step(first.headers, aId, 'authorize', await codeSentTo(first.phone, 2))).status, 200);
    const aCode = await codeSentTo(number.e164, 1);
    assert.equal((await step(second.headers, bId, 'authorize', await codeSentTo(second.phone, 2))).status, 200);
    const bCode = await codeSentTo(number.e164, 2);
    // The bank takes its time over the first: it has not changed the number when the second is proven.
    await bankControl('/mode', 'PATCH', {
      mobileChange: 'pending',
      decisionDelayMs: 4_000,
      pendingDecision: 'approve',
    });
    const atBank = async () =>
      (await bankControl<{ partnerReference: string }[]>('/mobile-number-changes')).map((c) => c.partnerReference);
    assert.equal((await step(first.headers, aId, 'confirm', aCode)).status, 200);
    await until('the first change at the bank', async () => ((await atBank()).includes(aId) ? true : undefined));
    assert.equal((await step(second.headers, bId, 'confirm', bCode)).status, 200);
    const rejected = await changeWhen(second.headers, bId, 'REJECTED');
    assert.equal(rejected.rejection_reason, 'NUMBER_TAKEN');
    await changeWhen(first.headers, aId, 'COMPLETED');
    assert.ok(!(await atBank()).includes(bId), 'the second change never reached the bank');
    assert.equal(await phoneOf(first.user.id), number.e164);
    assert.equal(await phoneOf(second.user.id), second.phone);
  });

  it('a claim holds while the bank may still act on it: PROCESSING, or REJECTED without its answer; a refusal or a release frees the number', async function () {
    this.timeout(60_000);
    const { db } = harness();
    const [holder, claimant] = await Promise.all([activatedCustomer(), activatedCustomer()]);
    const number = freshNumber().e164;
    const changeOf = async (customer: typeof holder, fields: Record<string, unknown>) => {
      const account = await db('accounts')
        .where({ user_id: customer.user.id, type: 'CURRENT' })
        .first('id', 'organization_id');
      const id = randomUUID();
      await db('phone_changes').insert({
        id,
        organization_id: account.organization_id,
        user_id: customer.user.id,
        account_id: account.id,
        old_phone_number: customer.phone,
        new_phone_number: number,
        authorization_channel: 'OLD_MOBILE',
        ...fields,
      });
      return { id, organizationId: account.organization_id as string };
    };
    const rival = await changeOf(holder, { status: 'PROCESSING', bank_requested_at: new Date() });
    const mine = await changeOf(claimant, { status: 'PROCESSING' });
    const claim = () =>
      claimNumberForBank(
        db,
        mine.organizationId,
        mine.id,
        { user_id: claimant.user.id, new_phone_number: number },
        new Date(),
      );
    const rivalIs = (fields: Record<string, unknown>) => db('phone_changes').where({ id: rival.id }).update(fields);
    assert.equal(await claim(), 'NUMBER_TAKEN', 'the rival is at the bank');
    await rivalIs({ status: 'REJECTED', rejection_reason: 'BANK_NO_DECISION' });
    assert.equal(await claim(), 'NUMBER_TAKEN', 'the bank may still change it for the rival');
    await rivalIs({ rejection_reason: 'BANK_UNAVAILABLE' });
    assert.equal(await claim(), 'NUMBER_TAKEN', 'nor did the bank say it did not');
    await rivalIs({ rejection_reason: 'BANK_CUSTOMER_NOT_FOUND' });
    assert.equal(await claim(), 'CLAIMED', "the bank's refusal frees it");
    assert.equal(await claim(), 'CLAIMED', 'a rerun finds its own claim');
    await rivalIs({ rejection_reason: 'BANK_NO_DECISION', bank_requested_at: null });
    assert.equal(await claim(), 'CLAIMED', 'a released claim (the runbook) counts no more');
  });

  it('a number the bank finds taken ends REJECTED (NUMBER_TAKEN), the phone unchanged', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    await bankControl('/mode', 'PATCH', { mobileChange: 'reject' });
    const number = freshNumber();
    const id = (
      await request(customer.headers, {
        new_mobile_country_code: '254',
        new_mobile_number: number.national,
        authorization_channel: 'OLD_MOBILE',
      })
    ).body.id as string;
    assert.equal((await step(customer.headers, id, 'authorize', await codeSentTo(customer.phone, 2))).status, 200);
    assert.equal((await step(customer.headers, id, 'confirm', await codeSentTo(number.e164))).status, 200);
    const rejected = await changeWhen(customer.headers, id, 'REJECTED');
    assert.equal(rejected.rejection_reason, 'NUMBER_TAKEN');
    assert.equal(await phoneOf(customer.user.id), customer.phone);
  });

  it('each step has attempts: the last wrong authorization code rejects the change (OTP_ATTEMPTS_EXHAUSTED)', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const number = freshNumber();
    const id = (
      await request(customer.headers, {
        new_mobile_country_code: '254',
        new_mobile_number: number.national,
        authorization_channel: 'OLD_MOBILE',
      })
    ).body.id as string;
    const code = await codeSentTo(customer.phone, 2);
    await changeWhen(customer.headers, id, 'AWAITING_AUTHORIZATION');
    const max = harness().config.OTP_MAX_ATTEMPTS;
    for (let left = max - 1; left > 0; left -= 1)
      assert.match(
        (await step(customer.headers, id, 'authorize', wrong(code))).body.description,
        new RegExp(`${left} attempts? left`),
      );
    assert.equal((await step(customer.headers, id, 'authorize', wrong(code))).status, 429);
    const rejected = await read(customer.headers, id);
    assert.equal(rejected.body.status, 'REJECTED');
    assert.equal(rejected.body.rejection_reason, 'OTP_ATTEMPTS_EXHAUSTED');
    assert.equal((await textsTo(number.e164)).length, 0, 'nothing sent to the new number');
  });

  it('while a change is open, the same request answers it (200) and one for another number or channel is 409 CONFLICT naming it: no code goes to the other number', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const [number, other] = [freshNumber(), freshNumber()];
    const ask = (national: string, channel = 'OLD_MOBILE') =>
      request(customer.headers, {
        new_mobile_country_code: '254',
        new_mobile_number: national,
        authorization_channel: channel,
      });
    // The e-mail counts as verified (that flow has its own suite), so EMAIL is a channel it may ask for.
    await harness().db('users').where({ id: customer.user.id }).update({ email_verified_at: new Date() });
    const created = await ask(number.national);
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const again = await ask(`0${number.national}`);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, id);
    for (const conflicting of [await ask(other.national), await ask(number.national, 'EMAIL')]) {
      assert.equal(conflicting.status, 409, conflicting.text);
      assert.deepEqual(Object.keys(conflicting.body).sort(), ['code', 'description']);
      assert.equal(conflicting.body.code, 'CONFLICT');
      assert.match(conflicting.body.description, new RegExp(`change ${id} is open`));
      assert.ok(!conflicting.text.includes(number.national), 'the open change’s number is not repeated');
      assert.equal(conflicting.headers.get('location'), created.body.url);
    }
    await changeWhen(customer.headers, id, 'AWAITING_AUTHORIZATION');
    assert.deepEqual(await textsTo(other.e164), [], 'nothing was sent to the other number');
  });

  it('each step has an expiry: a change not authorized in time is REJECTED (EXPIRED) by its timer', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const id = (
      await request(customer.headers, {
        new_mobile_country_code: '254',
        new_mobile_number: freshNumber().national,
        authorization_channel: 'OLD_MOBILE',
      })
    ).body.id as string;
    const rejected = await changeWhen(customer.headers, id, 'REJECTED', harness().config.PHONE_CHANGE_TTL + 10_000);
    assert.equal(rejected.rejection_reason, 'EXPIRED');
    await recordHistory(workflowIds.phoneChange(id), 'phoneChange-expired');
  });

  it('validation and ownership: digits only, a Kenyan mobile, not the own number; another user’s change is 404; no activated account is 404', async function () {
    this.timeout(60_000);
    const [customer, other, inactive] = await Promise.all([
      activatedCustomer(),
      newCustomer(0),
      newCustomer(0, { stage: 'new' }),
    ]);
    const bad = [
      { new_mobile_country_code: '+254', new_mobile_number: '712345678', authorization_channel: 'OLD_MOBILE' },
      { new_mobile_country_code: '254', new_mobile_number: '7123-45678', authorization_channel: 'OLD_MOBILE' },
      { new_mobile_country_code: '255', new_mobile_number: '712345678', authorization_channel: 'OLD_MOBILE' },
      { new_mobile_country_code: '254', new_mobile_number: '512345678', authorization_channel: 'OLD_MOBILE' },
      { new_mobile_country_code: '254', new_mobile_number: '712345678', authorization_channel: 'SMS' },
      { new_mobile_country_code: 254, new_mobile_number: '712345678', authorization_channel: 'OLD_MOBILE' },
      {
        new_mobile_country_code: '254',
        new_mobile_number: customer.phone.slice(4),
        authorization_channel: 'OLD_MOBILE',
      },
    ];
    for (const body of bad) {
      const reply = await request(customer.headers, body);
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description'], 'the plain shape');
      assert.equal(reply.body.code, 'BAD_REQUEST');
    }
    const id = (
      await request(customer.headers, {
        new_mobile_country_code: '254',
        new_mobile_number: freshNumber().national,
        authorization_channel: 'OLD_MOBILE',
      })
    ).body.id as string;
    assert.equal((await read(other.headers, id)).status, 404);
    assert.equal((await step(other.headers, id, 'authorize', '123456')).status, 404);
    const noBank = await request(inactive.headers, {
      new_mobile_country_code: '254',
      new_mobile_number: freshNumber().national,
      authorization_channel: 'OLD_MOBILE',
    });
    assert.equal(noBank.status, 404);
  });
});

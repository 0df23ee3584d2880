import { strict as assert } from 'node:assert';
import { randomInt } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import {
  activatedCustomer,
  activation,
  activationWhen,
  codeSentTo,
  newApplicant,
  textsTo,
  wrong,
} from '../support/current-account';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { applicantHeaders } from '../support/kyc';

const freshNumber = () => `7${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;

describe('spec 4.7 abuse limits and ownership: codes, numbers and tenants', () => {
  it('another organization’s user gets 404 for an activation, a verification and a change by id', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const activationId = (await activation.get(customer.headers)).body.id as string;
    const change = await call('POST', '/v1/user/accounts/current/phone/changes', {
      headers: customer.headers,
      json: { new_mobile_country_code: '254', new_mobile_number: freshNumber(), authorization_channel: 'OLD_MOBILE' },
    });
    const verification = await call('POST', '/v1/user/accounts/current/email/verifications', {
      headers: customer.headers,
    });
    const outsider = await applicantHeaders(DEMO.users.secondCustomer);
    const replies = await Promise.all([
      call('POST', `/v1/me/current-account/activations/${activationId}/otp/confirm`, {
        headers: outsider,
        json: { otp_code: '123456' },
      }),
      call('GET', `/v1/user/accounts/current/phone/changes/${change.body.id}`, { headers: outsider }),
      call('POST', `/v1/user/accounts/current/phone/changes/${change.body.id}/authorize`, {
        headers: outsider,
        json: { otp_code: '123456' },
      }),
      call('GET', `/v1/user/accounts/current/email/verifications/${verification.body.id}`, { headers: outsider }),
    ]);
    assert.deepEqual(
      replies.map((r) => r.status),
      [404, 404, 404, 404],
    );
  });

  it('codes sent to a number that is not the sender’s own are limited per number (429): nobody can text a stranger’s phone past the limit, and the stranger’s own codes are not used up', async function () {
    this.timeout(60_000);
    const { config, db } = harness();
    const victim = await newApplicant();
    const attacker = await activatedCustomer();
    // The victim's number already got the hour's allowance of codes asked for by other users.
    await db('otp_sends').insert(
      Array.from({ length: config.OTP_SENDS_PER_HOUR_PER_DESTINATION }, () => ({
        organization_id: attacker.user.organization_id,
        user_id: attacker.user.id,
        purpose: 'PHONE_CHANGE_CONFIRMATION',
        reference_id: attacker.user.id,
        channel: 'SMS',
        destination: victim.phone,
        sent_at: new Date(Date.now() - 5 * 60_000),
      })),
    );
    await harness()
      .db('users')
      .where({ id: victim.user.id })
      .update({ phone_number: `+254${freshNumber()}` });
    const taken = await call('POST', '/v1/user/accounts/current/phone/changes', {
      headers: attacker.headers,
      json: {
        new_mobile_country_code: '254',
        new_mobile_number: victim.phone.slice(4),
        authorization_channel: 'OLD_MOBILE',
      },
    });
    assert.equal(taken.status, 429, JSON.stringify(taken.body));
    assert.ok(Number(taken.headers.get('retry-after')) > 50 * 60);
    // The number's owner is limited by their own count only.
    await harness().db('users').where({ id: victim.user.id }).update({ phone_number: victim.phone });
    assert.equal((await activation.start(victim.headers)).status, 201);
    await codeSentTo(victim.phone);
  });

  it('a code is for one step: the owner’s authorization code does not confirm the new number (it counts as wrong)', async function () {
    this.timeout(60_000);
    const customer = await activatedCustomer();
    const national = freshNumber();
    const id = (
      await call('POST', '/v1/user/accounts/current/phone/changes', {
        headers: customer.headers,
        json: { new_mobile_country_code: '254', new_mobile_number: national, authorization_channel: 'OLD_MOBILE' },
      })
    ).body.id as string;
    const authorization = await codeSentTo(customer.phone, 2);
    const authorized = await call('POST', `/v1/user/accounts/current/phone/changes/${id}/authorize`, {
      headers: customer.headers,
      json: { otp_code: authorization },
    });
    assert.equal(authorized.status, 200);
    const confirmation = await codeSentTo(`+254${national}`);
    if (confirmation !== authorization) {
      const reused = await call('POST', `/v1/user/accounts/current/phone/changes/${id}/confirm`, {
        headers: customer.headers,
        json: { otp_code: authorization },
      });
      assert.equal(reused.status, 400);
      assert.match(reused.body.description, /Wrong code: \d attempts left/);
    }
  });

  it('a confirmation retried with its Idempotency-Key is answered once: the same 200 again, and a wrong code counts once', async () => {
    const customer = await newApplicant();
    await activation.start(customer.headers);
    const code = await codeSentTo(customer.phone);
    await activationWhen(customer.headers, (a) => a.status === 'AWAITING_OTP');
    const confirm = (otp_code: string, key: string) =>
      call('POST', '/v1/user/accounts/current/activation/otp/confirm', {
        headers: { ...customer.headers, 'Idempotency-Key': key },
        json: { otp_code },
      });
    const max = harness().config.OTP_MAX_ATTEMPTS;
    const first = await confirm(wrong(code), 'retry-1');
    const retried = await confirm(wrong(code), 'retry-1');
    assert.equal(first.status, 400);
    assert.deepEqual(retried.body.description, first.body.description, 'the same answer');
    assert.match(retried.body.description, new RegExp(`${max - 1} attempts left`), 'counted once');
    const ok = await confirm(code, 'retry-2');
    const again = await confirm(code, 'retry-2');
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(again.status, 200, 'a retry after a lost answer gets the answer');
    assert.equal(again.body.id, ok.body.id);
    assert.equal((await textsTo(customer.phone)).length, 1);
  });

  it('once a code is accepted, later submissions are refused without counting: the right code among 19 wrong ones sent at once', async function () {
    this.timeout(90_000);
    const max = harness().config.OTP_MAX_ATTEMPTS;
    // Several customers at once: the submissions' order within and across workflow tasks varies.
    await Promise.all(
      [0, 1, 2, 3].map(async (trial) => {
        const customer = await newApplicant();
        await activation.start(customer.headers);
        const code = await codeSentTo(customer.phone);
        const codes = Array.from({ length: 20 }, (_, i) => (i === trial * 5 ? code : wrong(code)));
        const answers = await Promise.all(codes.map((otp) => activation.confirm(customer.headers, otp)));
        const right = answers[trial * 5]!;
        const final = await activationWhen(
          customer.headers,
          (a) => a.status === 'COMPLETED' || a.status === 'REJECTED',
          'activation ended',
        );
        const counted = answers.filter((a) => /attempts? left/.test(String(a.body.description))).length;
        if (right.status === 200) {
          assert.equal(final.status, 'COMPLETED', `trial ${trial}: the accepted code completes the activation`);
          assert.ok(counted < max, `trial ${trial}: ${counted} wrong codes counted, fewer than the limit`);
        } else {
          // Refused: the wrong ones before it used the attempts up, in some order, and the right one came after.
          assert.equal(final.status, 'REJECTED', `trial ${trial}: ${right.status} ${right.text}`);
          assert.equal(final.rejection_reason, 'OTP_ATTEMPTS_EXHAUSTED');
        }
        for (const answer of answers) assert.notEqual(answer.status, 500, answer.text);
      }),
    );
  });
});

import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { createActivation } from '../../db/current-account/activation';
import { createEmailVerification } from '../../db/current-account/email-verification';
import { createPhoneChange } from '../../db/current-account/phone-change';
import type { Org } from './authorization-matrix';
import {
  type Context,
  db,
  type Exercise,
  first,
  type Fixture,
  type Instance,
  perMember,
  problem,
  row,
  type Rows,
} from './authorization-exercise';
import { headersOf, type Person, type World } from './authorization-world';
import { codeSentTo, emailsTo } from './current-account';
import { harness } from './harness';
import { call } from './http';
import { until } from './money';

// The matrix's exercises of the current-account self-service routes (see authorization-exercise.ts).

const otpBody = ({ fixture }: Context) => ({ otp_code: fixture.values!.code! });
const activationRows =
  (where: (target: Instance | undefined, people: string[]) => Record<string, string | string[]>) =>
  (target: Instance | undefined, people: string[]): Rows[] => [
    {
      table: 'current_account_activations',
      where: where(target, people),
      columns: ['id', 'status', 'otp_confirmed_at'],
    },
  ];
const ofPeople = (_target: Instance | undefined, people: string[]) => ({ user_id: people });
const atLeast = (statuses: string[], what: string) => async (table: string, id: string) => {
  const found = await row(table, { id });
  return problem(statuses.includes(String(found?.status)), `the ${what} is ${found?.status}`);
};
const confirmedActivation = (id: string) =>
  atLeast(['ONBOARDING', 'COMPLETED'], 'activation')('current_account_activations', id);
/** An activation row (no run behind it) of another customer: what a request may name but not reach. */
async function activationOf(world: World, org: Org) {
  const other = await world.provisioned(org);
  const made = await createActivation(
    db(),
    other.person.organizationId,
    other.person.id,
    other.accounts.current,
    new Date(),
  );
  return { person: other.person, activationId: made.row.id };
}

const startActivation: Exercise = {
  prepare: async (world) => ({ subject: (await world.provisioned()).person, targets: [] }),
  request: () => ({}),
  rows: activationRows(ofPeople),
  async done({ person }) {
    const started = await row('current_account_activations', { user_id: person!.id });
    return problem(started !== undefined, 'no activation started');
  },
};
const readActivation: Exercise = {
  async prepare(world) {
    const own = await activationOf(world, 'own');
    return { subject: own.person, targets: [], secrets: [own.activationId], values: { id: own.activationId } };
  },
  request: () => ({}),
  shows: (_cell, reply, { fixture }) => problem(reply.body.id === fixture.values!.id, `id ${reply.body.id}`),
};
const confirmActivation: Exercise = {
  async prepare(world) {
    const member = await world.awaitingCode();
    return {
      subject: member.person,
      targets: [],
      secrets: [member.activationId],
      values: { code: member.code, id: member.activationId },
    };
  },
  request: (_cell, context) => ({ json: otpBody(context) }),
  rows: activationRows(ofPeople),
  done: (_cell, _reply, { fixture }) => confirmedActivation(fixture.values!.id!),
};
const confirmDeprecated: Exercise = {
  async prepare(world) {
    const member = await world.awaitingCode();
    const [peer, foreign] = await Promise.all([activationOf(world, 'own'), activationOf(world, 'other')]);
    return {
      subject: member.person,
      targets: perMember({ customer: member, peer, foreign }, (m) => ({ activation: m.activationId })),
      values: { code: member.code },
    };
  },
  request: ({ target }, context) => ({ params: { activationId: target!.ids.activation! }, json: otpBody(context) }),
  rows: activationRows((target) => ({ id: target!.ids.activation! })),
  done: ({ target }) => confirmedActivation(target!.ids.activation!),
};
const resendActivation: Exercise = {
  async prepare(world) {
    const member = await world.awaitingCode();
    // A new code only once the cool-down after the last one has passed.
    await new Promise((resolve) => setTimeout(resolve, harness().config.OTP_RESEND_COOLDOWN + 200));
    return { subject: member.person, targets: [], secrets: [member.activationId] };
  },
  request: () => ({}),
  rows: (_target, people) => [{ table: 'otp_sends', where: { user_id: people }, columns: ['id'] }],
  async done({ person }, _reply, _context, since) {
    const sent = await first(
      db()('otp_sends').where({ user_id: person!.id }).where('sent_at', '>=', since).select('id'),
    );
    return problem(sent !== undefined, 'no new code sent');
  },
};

const startEmail: Exercise = {
  prepare: async (world) => ({ subject: await world.newPerson('own', 'CUSTOMER'), targets: [] }),
  request: () => ({}),
  rows: (_target, people) => [{ table: 'email_verifications', where: { user_id: people }, columns: ['id'] }],
  async done({ person }, reply) {
    const started = await row('email_verifications', { id: reply.body.id });
    return problem(started?.user_id === person!.id, "the verification is not the caller's");
  },
};
/** E-mail verifications of the customer (started through the service when `live`), a peer, another organization's. */
async function emailTargets(world: World, live: boolean): Promise<Fixture> {
  const of = async (org: Org) => {
    const person = await world.newPerson(org, 'CUSTOMER');
    const made = await createEmailVerification(db(), person.organizationId, person.id, person.email, new Date());
    return { person, id: made.row.id, token: '' };
  };
  const customer = live ? await startedEmail(world) : await of('own');
  const [peer, foreign] = await Promise.all([of('own'), of('other')]);
  return {
    subject: customer.person,
    targets: perMember({ customer, peer, foreign }, (m) => ({ id: m.id })),
    values: { token: customer.token },
  };
}
async function startedEmail(world: World) {
  const person = await world.newPerson('own', 'CUSTOMER');
  const started = await call('POST', '/v1/user/accounts/current/email/verifications', {
    headers: await headersOf(person),
  });
  assert.equal(started.status, 201, started.text);
  const id = started.body.id as string;
  const token = await until('the verification link e-mailed', async () => {
    const mail = (await emailsTo(person.email)).map((m) => m.text ?? '').join('\n');
    return new RegExp(`/email/verifications/${id}/confirm\\?token=([A-Za-z0-9_-]{43})`).exec(mail)?.[1];
  });
  await until('the verification SENT', async () => (await row('email_verifications', { id }))?.status === 'SENT');
  return { person, id, token };
}
const readEmail: Exercise = {
  prepare: (world) => emailTargets(world, false),
  request: ({ target }) => ({ params: { emailVerificationId: target!.ids.id! } }),
  shows: ({ target }, reply) => problem(reply.body.id === target!.ids.id, `id ${reply.body.id}`),
};
const confirmEmail: Exercise = {
  prepare: (world) => emailTargets(world, true),
  request: ({ target }, { fixture }) => ({
    params: { emailVerificationId: target!.ids.id! },
    json: { token: fixture.values!.token },
  }),
  rows: (target) => [
    { table: 'email_verifications', where: { id: target!.ids.id! }, columns: ['status', 'verified_at'] },
  ],
  done: ({ target }) => atLeast(['VERIFIED'], 'verification')('email_verifications', target!.ids.id!),
};

const newMobile = () => `7${String(randomBytes(4).readUInt32BE() % 100_000_000).padStart(8, '0')}`;
const PHONE_COLUMNS = ['id', 'status', 'authorized_at'];
/** A change row of a customer with an account (no run behind it): what a request may name but not reach. */
async function changeOf(member: { person: Person; accounts: { current: string } }) {
  const made = await createPhoneChange(
    db(),
    member.person.organizationId,
    {
      user_id: member.person.id,
      account_id: member.accounts.current,
      old_phone_number: member.person.phone,
      new_phone_number: `+254${newMobile()}`,
      authorization_channel: 'OLD_MOBILE',
    },
    new Date(),
  );
  assert.ok('row' in made, 'the change is made');
  return { person: member.person, id: made.row.id, code: '' };
}
/** Changes of the customer (as `own` makes it), its peer and another organization's. */
async function phoneTargets(world: World, own: () => Promise<{ person: Person; id: string; code: string }>) {
  const [customer, peer, foreign] = await Promise.all([
    own(),
    world.provisioned('own').then(changeOf),
    world.provisioned('other').then(changeOf),
  ]);
  return {
    subject: customer.person,
    targets: perMember({ customer, peer, foreign }, (m) => ({ id: m.id })),
    values: { code: customer.code },
  };
}
/** Waits for a change's run to settle in `status` (its code recorded as sent). */
const changeIn = (id: string, status: string) =>
  until(`change ${status}`, async () => (await row('phone_changes', { id }))?.status === status);
/** An activated customer's change requested through the service: the owner's code, and the number it moves to. */
async function requestedChange(world: World) {
  const member = await world.activated();
  const number = newMobile();
  const reply = await call('POST', '/v1/user/accounts/current/phone/changes', {
    headers: await headersOf(member.person),
    json: { new_mobile_country_code: '254', new_mobile_number: number, authorization_channel: 'OLD_MOBILE' },
  });
  assert.equal(reply.status, 201, reply.text);
  // The second text to the old mobile (the first was the activation's code).
  const code = await codeSentTo(member.person.phone, 2);
  const id = reply.body.id as string;
  await changeIn(id, 'AWAITING_AUTHORIZATION');
  return { person: member.person, id, code, number: `+254${number}` };
}
const requestChange: Exercise = {
  prepare: async (world) => ({ subject: (await world.activated()).person, targets: [] }),
  request: () => ({
    json: { new_mobile_country_code: '254', new_mobile_number: newMobile(), authorization_channel: 'OLD_MOBILE' },
  }),
  rows: (_target, people) => [{ table: 'phone_changes', where: { user_id: people }, columns: ['id', 'status'] }],
  async done({ person }, reply) {
    const made = await row('phone_changes', { id: reply.body.id });
    return problem(made?.user_id === person!.id, "the change is not the caller's");
  },
};
const readChange: Exercise = {
  prepare: (world) => phoneTargets(world, async () => changeOf(await world.provisioned())),
  request: ({ target }) => ({ params: { changeId: target!.ids.id! } }),
  shows: ({ target }, reply) => problem(reply.body.id === target!.ids.id, `id ${reply.body.id}`),
};
const phoneStep = (step: 'authorize' | 'confirm'): Exercise => ({
  prepare: (world) =>
    phoneTargets(world, async () => {
      const change = await requestedChange(world);
      if (step === 'authorize') return change;
      const authorized = await call('POST', `/v1/user/accounts/current/phone/changes/${change.id}/authorize`, {
        headers: await headersOf(change.person),
        json: { otp_code: change.code },
      });
      assert.equal(authorized.status, 200, authorized.text);
      const code = await codeSentTo(change.number);
      await changeIn(change.id, 'AWAITING_CONFIRMATION');
      return { ...change, code };
    }),
  request: ({ target }, context) => ({ params: { changeId: target!.ids.id! }, json: otpBody(context) }),
  rows: (target) => [{ table: 'phone_changes', where: { id: target!.ids.id! }, columns: PHONE_COLUMNS }],
  done: ({ target }) =>
    atLeast(
      step === 'authorize' ? ['AWAITING_CONFIRMATION', 'PROCESSING', 'COMPLETED'] : ['PROCESSING', 'COMPLETED'],
      'change',
    )('phone_changes', target!.ids.id!),
});

/** A delivery report of a text we sent, to the registered address or another. */
const deliveryReport: Exercise = {
  async prepare(world) {
    const messageId = `ATXid_${randomUUID()}`;
    const customer = world.people.customer;
    await db()('otp_sends').insert({
      organization_id: customer.organizationId,
      user_id: customer.id,
      purpose: 'ACTIVATION',
      reference_id: randomUUID(),
      channel: 'SMS',
      destination: customer.phone,
      provider_message_id: messageId,
    });
    const token = harness().config.SMS_CALLBACK_TOKEN!;
    const instance = (genuine: boolean): Instance => ({
      label: genuine ? 'the registered address' : 'another address',
      genuine,
      ids: { token: genuine ? token : `${token.slice(0, -4)}nope`, messageId },
      secrets: [],
    });
    return { targets: [instance(true), instance(false)] };
  },
  request: ({ target }) => ({
    params: { token: target!.ids.token! },
    form: { id: target!.ids.messageId!, status: 'Success', phoneNumber: '+254700000000' },
  }),
  rows: (target) => [
    {
      table: 'otp_sends',
      where: { provider_message_id: target!.ids.messageId! },
      columns: ['delivery_status', 'delivery_reported_at'],
    },
  ],
  async done({ target }) {
    const send = await row('otp_sends', { provider_message_id: target!.ids.messageId });
    return problem(send?.delivery_status === 'Success', 'the report is not recorded');
  },
};

export const CURRENT_ACCOUNT_EXERCISES: Record<string, Exercise> = {
  'POST /v1/user/accounts/current/activation': startActivation,
  'GET /v1/user/accounts/current/activation': readActivation,
  'POST /v1/user/accounts/current/activation/otp/confirm': confirmActivation,
  'POST /v1/me/current-account/activations/{activationId}/otp/confirm': confirmDeprecated,
  'POST /v1/user/accounts/current/activation/otp/resend': resendActivation,
  'POST /v1/user/accounts/current/email/verifications': startEmail,
  'GET /v1/user/accounts/current/email/verifications/{emailVerificationId}': readEmail,
  'POST /v1/user/accounts/current/email/verifications/{emailVerificationId}/confirm': confirmEmail,
  'POST /v1/user/accounts/current/phone/changes': requestChange,
  'GET /v1/user/accounts/current/phone/changes/{changeId}': readChange,
  'POST /v1/user/accounts/current/phone/changes/{changeId}/authorize': phoneStep('authorize'),
  'POST /v1/user/accounts/current/phone/changes/{changeId}/confirm': phoneStep('confirm'),
  'POST /v1/current-account/callbacks/sms/delivery-reports/{token}': deliveryReport,
};

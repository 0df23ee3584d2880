import { randomBytes } from 'node:crypto';
import { type Caller, codeTexted, type Reply, verifyIdentity } from './client-flows';
import { type Check, type Customer, otpSerialProblems, type Scenario, type World } from './handlers-world';
import { sleep } from './random';

/**
 * The handlers suite's self-service and identity scenarios: codes submitted n at a time (the
 * right one among wrong ones), and a verification whose provider result arrives n times at once.
 */

/** The attempts a code allows (the deployment runs the default OTP_MAX_ATTEMPTS). */
const MAX_ATTEMPTS = 5;
const ACTIVATION = '/v1/user/accounts/current/activation';
const PHONE = '/v1/user/accounts/current/phone/changes';
const EMAIL = '/v1/user/accounts/current/email/verifications';

const wrongCode = (code: string, i: number) => String((Number(code) + 1 + i) % 1_000_000).padStart(6, '0');

/** n submissions at once, the right one at a seeded place among n - 1 wrong ones. */
async function submitAtOnce(n: number, right: number, submit: (wrong: boolean, i: number) => Promise<Reply>) {
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => submit(i !== right, i)));
  return { answers, right };
}

/** GETs `path` until its status is one of `ends`; the last body, or a 'lost' one after 90 s. */
async function endOf(world: World, caller: Caller, path: string, ends: string[]): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> = { status: 'lost' };
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(500)) {
    const reply = await world.api.call('GET', path, caller);
    if (reply.status === 200) last = reply.body;
    if (ends.includes(String(last.status))) return last;
  }
  return { ...last, status: `lost (last ${String(last.status)})` };
}

/** A serial order's end for a code burst: accepted → `done`, locked → REJECTED (attempts), else problems. */
function otpEnd(burst: { answers: Reply[]; right: number }, end: Record<string, unknown>, done: string): string[] {
  const { problems, accepted } = otpSerialProblems(burst, MAX_ATTEMPTS);
  const why = String(end.rejection_reason ?? end.failure_reason ?? '');
  if (accepted && end.status !== done)
    problems.push(`the right code was accepted, yet it ended ${String(end.status)} ${why} (${String(end.id)})`);
  if (!accepted && end.status === done) problems.push(`the right code was refused, yet it ended ${done}`);
  return problems;
}

/** A customer whose current account waits for activation, and its activation AWAITING_OTP with the code read. */
async function awaitingActivation(world: World): Promise<{ customer: Customer; code: string }> {
  const customer = await world.customer('applicant');
  const begun = await world.api.call('POST', ACTIVATION, customer.caller);
  if (begun.status !== 201) throw new Error(`activation: ${begun.status} ${begun.text}`);
  const code = await codeTexted(world.deployment.simulators.sms, customer.phone, world.api);
  if (!code) throw new Error('no activation code texted');
  return { customer, code };
}

/** accountActivation: n codes at once (one right); accepted ends COMPLETED at the bank, else REJECTED. */
export const activationCodes: Scenario = {
  type: 'accountActivation',
  sends: 'confirmOtp Updates (one right code among wrong ones)',
  async prepare(world) {
    const { customer, code } = await awaitingActivation(world);
    return {
      async send(n): Promise<Check> {
        const burst = await submitAtOnce(n, n - 1, (wrong, i) =>
          world.api.call('POST', `${ACTIVATION}/otp/confirm`, customer.caller, {
            json: { otp_code: wrong ? wrongCode(code, i) : code },
          }),
        );
        return async () =>
          otpEnd(burst, await endOf(world, customer.caller, ACTIVATION, ['COMPLETED', 'REJECTED']), 'COMPLETED');
      },
    };
  },
};

/** phoneChange: an activated customer's change; n authorization codes at once (one right). */
export const phoneChangeCodes: Scenario = {
  type: 'phoneChange',
  sends: 'authorizeOtp Updates (one right code among wrong ones)',
  async prepare(world) {
    const { customer, code } = await awaitingActivation(world);
    const confirmed = await world.api.call('POST', `${ACTIVATION}/otp/confirm`, customer.caller, {
      json: { otp_code: code },
    });
    if (confirmed.status !== 200) throw new Error(`activation confirm: ${confirmed.status} ${confirmed.text}`);
    const activated = await endOf(world, customer.caller, ACTIVATION, ['COMPLETED', 'REJECTED']);
    if (activated.status !== 'COMPLETED') throw new Error(`activation ${String(activated.status)}`);
    const national = `7${randomBytes(4).readUInt32BE(0) % 100_000_000}`.padEnd(9, '0');
    const asked = await world.api.call('POST', PHONE, customer.caller, {
      json: { new_mobile_country_code: '254', new_mobile_number: national, authorization_channel: 'OLD_MOBILE' },
    });
    if (asked.status !== 201) throw new Error(`phone change: ${asked.status} ${asked.text}`);
    const path = `${PHONE}/${String(asked.body.id)}`;
    // The owner's code is the second text to its phone (the first was the activation's).
    let owner: string | undefined;
    for (let tries = 0; tries < 60 && (!owner || owner === code); tries++, await sleep(500))
      owner = await codeTexted(world.deployment.simulators.sms, customer.phone, world.api);
    if (!owner || owner === code) throw new Error('no authorization code texted');
    return {
      async send(n): Promise<Check> {
        const burst = await submitAtOnce(n, 0, (wrong, i) =>
          world.api.call('POST', `${path}/authorize`, customer.caller, {
            json: { otp_code: wrong ? wrongCode(owner, i) : owner },
          }),
        );
        return async () =>
          otpEnd(
            burst,
            await endOf(world, customer.caller, path, ['AWAITING_CONFIRMATION', 'REJECTED']),
            'AWAITING_CONFIRMATION',
          );
      },
    };
  },
};

/** The token of the link e-mailed to `to`, as the customer's mail client shows it. */
async function linkToken(emailUrl: string, to: string): Promise<string> {
  for (let tries = 0; tries < 60; tries++, await sleep(500)) {
    const mails = (await (await fetch(`${emailUrl}/_control/messages?to=${encodeURIComponent(to)}`)).json()) as {
      text?: string;
    }[];
    const token = /confirm\?token=([A-Za-z0-9_-]{43})/.exec(mails.at(-1)?.text ?? '')?.[1];
    if (token) return token;
  }
  throw new Error('no link e-mailed');
}

/** emailVerification: n tokens at once (one right); the right one accepted ends VERIFIED, else FAILED. */
export const emailTokens: Scenario = {
  type: 'emailVerification',
  sends: 'confirmEmail Updates (one right token among wrong ones)',
  async prepare(world) {
    const emailUrl = world.deployment.simulators.email;
    if (!emailUrl) throw new Error('the handlers suite runs the e-mail simulator');
    const customer = await world.customer('user');
    const begun = await world.api.call('POST', EMAIL, customer.caller);
    if (begun.status !== 201) throw new Error(`e-mail verification: ${begun.status} ${begun.text}`);
    const path = `${EMAIL}/${String(begun.body.id)}`;
    const token = await linkToken(emailUrl, `${customer.id}@chaos.test`);
    return {
      async send(n): Promise<Check> {
        const burst = await submitAtOnce(n, Math.floor(n / 2), (wrong) =>
          world.api.call('POST', `${path}/confirm`, customer.caller, {
            json: { token: wrong ? randomBytes(32).toString('base64url') : token },
          }),
        );
        return async () => otpEnd(burst, await endOf(world, customer.caller, path, ['VERIFIED', 'FAILED']), 'VERIFIED');
      },
    };
  },
};

/**
 * kycVerification: a server upload whose provider result reaches us n times at once (the
 * simulator's burst), while the client polls its status: APPROVED, its verdict recorded once.
 */
export const verificationResults: Scenario = {
  type: 'kycVerification',
  sends: 'provider result callbacks (the provider callback signal)',
  async prepare(world) {
    const customer = await world.customer('user');
    return {
      async send(): Promise<Check> {
        let applicationId = '';
        const ended = await verifyIdentity(world.api, customer.caller, customer.idNumber, (id) => (applicationId = id));
        return async () => {
          const problems = ended.outcome === 'APPROVED' ? [] : [`ended ${ended.outcome}`];
          const events = await world.deployment.db('kyc_callback_events').where({ application_id: applicationId });
          if (events.length !== 1) problems.push(`${events.length} verdict events recorded, not 1`);
          return problems;
        };
      },
    };
  },
};

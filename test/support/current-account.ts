import { strict as assert } from 'node:assert';
import { randomInt } from 'node:crypto';
import { verifyKyc } from '../../dev/customer-stages';
import { harness } from './harness';
import { call, type Reply } from './http';
import { newCustomer, stageClient, until } from './money';

/**
 * A customer whose current account waits for activation, taken through the API: by default with
 * a provisioned KYC subject (a server_upload verification the provider approved, with a full
 * name, date of birth, an ID card with its number and images); `none`: signed up only;
 * `unapproved`: a verification the provider rejected.
 */
export async function newApplicant(options: { subject?: 'provisioned' | 'none' | 'unapproved' } = {}) {
  const subject = options.subject ?? 'provisioned';
  const customer = await newCustomer(randomInt(0, 10), {
    stage: subject === 'provisioned' ? 'kyc-approved' : 'new',
    name: 'Amina Wanjiru Otieno',
    dateOfBirth: '1990-04-12',
  });
  if (subject === 'unapproved') {
    const token = customer.headers.Authorization.slice('Bearer '.length);
    // An ID number ending in 1: the identity simulator answers No Match.
    const { verdict } = await verifyKyc(stageClient(token), { idNumber: `${randomInt(1_000_000, 10_000_000)}1` });
    assert.equal(verdict, 'REJECTED');
  }
  return customer;
}

async function control<T>(url: string | undefined, path: string, method = 'GET', body?: unknown): Promise<T> {
  assert.ok(url, 'the simulator runs');
  const response = await fetch(`${url}/_control${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

export const smsControl = <T>(path: string, method?: string, body?: unknown) =>
  control<T>(harness().config.SMS_PROVIDER_URL, path, method, body);
export const emailControl = <T>(path: string, method?: string, body?: unknown) =>
  control<T>(harness().config.EMAIL_PROVIDER_URL, path, method, body);
export const bankControl = <T>(path: string, method?: string, body?: unknown) =>
  control<T>(harness().config.BANK_URL, path, method, body);

/** The texts the SMS gateway sent to `phone`, oldest first. */
export const textsTo = (phone: string) =>
  smsControl<{ message: string; sentAt: string }[]>(`/messages?to=${encodeURIComponent(phone)}`);
export const emailsTo = (address: string) =>
  emailControl<{ subject: string; text?: string; html?: string }[]>(`/messages?to=${encodeURIComponent(address)}`);

const codeIn = (message: string) => /(\d{6}) is your code/.exec(message)?.[1];

/** The newest code sent to `phone` once there are `count` texts. */
export async function codeSentTo(phone: string, count = 1): Promise<string> {
  const texts = await until(`${count} text(s) to the phone`, async () => {
    const sent = await textsTo(phone);
    return sent.length >= count ? sent : undefined;
  });
  const code = codeIn(texts.at(-1)!.message);
  assert.ok(code, 'the text carries a code');
  return code;
}
export async function codeEmailedTo(address: string, count = 1): Promise<string> {
  const mails = await until(`${count} e-mail(s) to the address`, async () => {
    const sent = await emailsTo(address);
    return sent.length >= count ? sent : undefined;
  });
  const code = codeIn(mails.at(-1)!.text ?? '');
  assert.ok(code, 'the e-mail carries a code');
  return code;
}

/** Another code than `code` (same length), for wrong attempts. */
export const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

export const activation = {
  start: (headers: Record<string, string>) => call('POST', '/v1/user/accounts/current/activation', { headers }),
  get: (headers: Record<string, string>) => call('GET', '/v1/user/accounts/current/activation', { headers }),
  confirm: (headers: Record<string, string>, otp_code: string) =>
    call('POST', '/v1/user/accounts/current/activation/otp/confirm', { headers, json: { otp_code } }),
  resend: (headers: Record<string, string>) =>
    call('POST', '/v1/user/accounts/current/activation/otp/resend', { headers }),
};

/** Polls the caller's activation until `done` holds. */
export async function activationWhen(
  headers: Record<string, string>,
  done: (body: Record<string, unknown>) => boolean,
  label = 'activation state',
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  return until(
    label,
    async () => {
      const reply: Reply = await activation.get(headers);
      return reply.status === 200 && done(reply.body) ? (reply.body as Record<string, unknown>) : undefined;
    },
    timeoutMs,
  );
}

/** A customer whose current account was activated through the real flow (a phone change needs the bank's customer). */
export async function activatedCustomer() {
  const customer = await newApplicant();
  const started = await activation.start(customer.headers);
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const confirmed = await activation.confirm(customer.headers, await codeSentTo(customer.phone));
  assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
  await activationWhen(customer.headers, (a) => a.status === 'COMPLETED', 'activation COMPLETED');
  return customer;
}

import { randomInt } from 'node:crypto';

/**
 * A customer taken through the lifecycle's stages by the service's own API, as a client app
 * would take them: the development CLI (`user create --stage`), the demo seed's staged customers
 * and the tests all come this way, so no stage is reached by writing rows.
 *
 * - `new`: signed up; the current account PENDING_ACTIVATION, no bank customer, KYC not started.
 * - `kyc-approved`: a server_upload verification (ID card, number, date of birth, images) that the
 *   identity provider approved: the subject is provisioned.
 * - `active`: the current account activated: the code texted to the customer's mobile confirmed,
 *   the bank's onboarding done (its customer and account numbers on the account).
 */
export const STAGES = ['new', 'kyc-approved', 'active'] as const;
export type Stage = (typeof STAGES)[number];

export interface StageClient {
  /** The API's base URL. */
  apiUrl: string;
  /** The SMS gateway simulator's base URL: where the activation code is read (its /_control/messages). */
  smsUrl: string;
  /** The customer's bearer token. */
  token: string;
}

export interface StageOptions {
  /**
   * The ID card number stated (unique per customer: the bank refuses a second customer with the
   * same document). Its last digit decides the simulated verdict: 0, 6, 7 and 8 approve.
   */
  idNumber?: string;
  dateOfBirth?: string;
  /** How long to wait for each verdict (the provider's, the bank's). */
  timeoutMs?: number;
}

/** A tiny JPEG (its magic bytes are what the identity provider and the bank check). */
export const JPEG_BASE64 = Buffer.from([
  0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 1, 2, 3, 4, 5, 6,
]).toString('base64');

/** An ID card number the identity simulator approves (last digit 0, 6, 7 or 8). */
export const approvedIdNumber = () => `${randomInt(10_000_000, 100_000_000)}${[0, 6, 7, 8][randomInt(0, 4)]}`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function send(client: StageClient, method: string, path: string, json?: unknown): Promise<Answer> {
  const response = await fetch(`${client.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${client.token}`,
      ...(json !== undefined && { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function expect(answer: Answer, statuses: number[], what: string): Record<string, unknown> {
  if (!statuses.includes(answer.status))
    throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`);
  return answer.body;
}

async function poll<T>(what: string, timeoutMs: number, read: () => Promise<T | undefined>): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    const waited = Date.now() - started;
    if (waited > timeoutMs) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
    // Every 50 ms for the first two seconds (the verdicts come within one here), then every 500 ms.
    await new Promise((resolve) => setTimeout(resolve, waited < 2_000 ? 50 : 500));
  }
}

/** Verification through server_upload, waited for until the provider's verdict: APPROVED, or an error. */
export async function approveKyc(client: StageClient, options: StageOptions = {}): Promise<string> {
  const { id, verdict } = await verifyKyc(client, options);
  if (verdict !== 'APPROVED') throw new Error(`KYC verification ended ${verdict}, not APPROVED`);
  return id;
}

/** Verification through server_upload (resumed when one is pending), waited for until the provider's verdict. */
export async function verifyKyc(
  client: StageClient,
  options: StageOptions = {},
): Promise<{ id: string; verdict: string }> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const created = await send(client, 'POST', '/v1/kyc/applications');
  // One active application per user: a 409 names it (a CLI run again resumes it).
  const id =
    created.status === 201
      ? (created.body.id as string)
      : /\(([0-9a-f-]{36})\)/.exec(String(expect(created, [409], 'KYC application').description))?.[1];
  if (!id) throw new Error(`KYC application: ${JSON.stringify(created.body)}`);
  const status = async () =>
    expect(await send(client, 'GET', `/v1/kyc/applications/${id}/status`), [200], 'KYC status').status as string;
  if ((await status()) === 'DRAFT') {
    expect(
      await send(client, 'POST', `/v1/kyc/applications/${id}/verification`, {
        channel: 'server_upload',
        id_type: 'IDENTITY_CARD',
        id_number: options.idNumber ?? approvedIdNumber(),
        date_of_birth: options.dateOfBirth ?? '1990-04-12',
        selfie: JPEG_BASE64,
        document_front: JPEG_BASE64,
        document_back: JPEG_BASE64,
        consent: true,
      }),
      [202],
      'KYC verification',
    );
  }
  const verdict = await poll('KYC verdict', timeoutMs, async () => {
    const now = await status();
    return now === 'ID_VERIFICATION_PENDING' ? undefined : now;
  });
  return { id, verdict };
}

/** The activation codes the SMS gateway simulator texted to `phone`: how many, and the newest. */
async function activationTexts(client: StageClient, phone: string): Promise<{ count: number; code?: string }> {
  const response = await fetch(`${client.smsUrl}/_control/messages?to=${encodeURIComponent(phone)}`);
  if (!response.ok) throw new Error(`SMS simulator: HTTP ${response.status}`);
  const texts = ((await response.json()) as { message: string }[]).filter((t) => t.message.includes('activate'));
  return { count: texts.length, code: /(\d{6}) is your code/.exec(texts.at(-1)?.message ?? '')?.[1] };
}

/** Activation: started, its texted code confirmed, waited for until the bank's onboarding COMPLETED it. */
export async function activateCurrentAccount(
  client: StageClient,
  phone: string,
  options: StageOptions = {},
): Promise<Record<string, unknown>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const confirm = (code: string) =>
    send(client, 'POST', '/v1/user/accounts/current/activation/otp/confirm', { otp_code: code });
  const newCode = async (before: number) =>
    poll('the activation code by SMS', timeoutMs, async () => {
      const now = await activationTexts(client, phone);
      return now.count > before ? now.code : undefined;
    });
  let before = (await activationTexts(client, phone)).count;
  const started = await send(client, 'POST', '/v1/user/accounts/current/activation');
  const open = expect(started, [200, 201], 'activation start');
  if (open.status !== 'ONBOARDING') {
    // One left open by an earlier run (200): its last code first, then a fresh one once the resend is allowed.
    const last = started.status === 200 ? (await activationTexts(client, phone)).code : undefined;
    let confirmed = last ? await confirm(last) : undefined;
    if (confirmed?.status !== 200) {
      if (started.status === 200) {
        before = (await activationTexts(client, phone)).count;
        await poll('the code resent', timeoutMs, async () => {
          const resent = await send(client, 'POST', '/v1/user/accounts/current/activation/otp/resend');
          return resent.status === 200 ? true : undefined;
        });
      }
      confirmed = await confirm(await newCode(before));
    }
    expect(confirmed, [200], 'activation code');
  }
  const done = await poll('activation COMPLETED', timeoutMs, async () => {
    const now = expect(await send(client, 'GET', '/v1/user/accounts/current/activation'), [200], 'activation');
    return now.status === 'COMPLETED' || now.status === 'REJECTED' ? now : undefined;
  });
  if (done.status !== 'COMPLETED')
    throw new Error(`activation ${String(done.status)}: ${String(done.rejection_reason)}`);
  return done;
}

/** Takes a signed-up customer to `stage` (each stage includes the ones before it). */
export async function reachStage(
  client: StageClient,
  customer: { phone: string },
  stage: Stage,
  options: StageOptions = {},
): Promise<void> {
  if (stage === 'new') return;
  await approveKyc(client, options);
  if (stage === 'active') await activateCurrentAccount(client, customer.phone, options);
}

import { strict as assert } from 'node:assert';
import { randomBytes, randomInt } from 'node:crypto';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { codeSentTo, emailsTo, newApplicant, smsControl, wrong } from '../support/current-account';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { until } from '../support/money';
import { freePort } from '../support/ports';
import { spawnService } from '../support/processes';

/**
 * The deployment shape, at debug level: the API and a worker as their own processes, their
 * output read whole after every self-service flow ran through them.
 */
describe('spec 4.7 logs: no one-time code, link token, provider key or phone number ever appears in a log line', () => {
  it('activation (wrong and right codes), e-mail verification and phone change through a debug-level API and worker: their logs hold the ids, never a code, token, key or number', async function () {
    this.timeout(180_000);
    const signingKey = JSON.stringify(await generateServiceSigningKey());
    const taskQueue = `logs-${randomBytes(4).toString('hex')}`;
    const port = await freePort();
    const common = { LOG_LEVEL: 'debug', TEMPORAL_TASK_QUEUE: taskQueue, SERVICE_SIGNING_KEY: signingKey };
    const worker = spawnService('worker/main.ts', { ...common, WORKER_METRICS_PORT: String(await freePort()) });
    const api = spawnService('api/server.ts', { ...common, PORT: String(port) });
    const { config } = harness();
    // The keys, and every code, token and number the flows use.
    const secrets: string[] = [
      config.OTP_HMAC_SECRET!,
      config.SMS_API_KEY!,
      config.EMAIL_API_KEY!,
      config.BANK_CLIENT_SECRET!,
      config.SMS_CALLBACK_TOKEN!,
    ];
    try {
      await Promise.all([worker.waitFor(/worker running/, 60_000), api.waitFor(/api listening/, 60_000)]);
      const baseUrl = `http://127.0.0.1:${port}`;
      // The gateway reports each text's delivery to this API (its token is in the path).
      await smsControl('/mode', 'PATCH', {
        deliveryReportUrl: `${baseUrl}/v1/current-account/callbacks/sms/delivery-reports/${config.SMS_CALLBACK_TOKEN}`,
      });
      const post = (headers: Record<string, string>, path: string, json?: unknown) =>
        call('POST', path, { headers, json, baseUrl });
      const get = (headers: Record<string, string>, path: string) => call('GET', path, { headers, baseUrl });

      const customer = await newApplicant();
      secrets.push(customer.phone);
      const started = await post(customer.headers, '/v1/user/accounts/current/activation');
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const code = await codeSentTo(customer.phone);
      secrets.push(code);
      await until(
        'AWAITING_OTP',
        async () =>
          (await get(customer.headers, '/v1/user/accounts/current/activation')).body.status === 'AWAITING_OTP',
      );
      assert.equal(
        (await post(customer.headers, '/v1/user/accounts/current/activation/otp/confirm', { otp_code: wrong(code) }))
          .status,
        400,
      );
      assert.equal(
        (await post(customer.headers, '/v1/user/accounts/current/activation/otp/confirm', { otp_code: code })).status,
        200,
      );
      await until(
        'COMPLETED',
        async () => (await get(customer.headers, '/v1/user/accounts/current/activation')).body.status === 'COMPLETED',
        20_000,
      );

      const verification = await post(customer.headers, '/v1/user/accounts/current/email/verifications');
      assert.equal(verification.status, 201, JSON.stringify(verification.body));
      const mail = await until('the link', async () => (await emailsTo(customer.user.email)).at(0));
      const token = /token=([A-Za-z0-9_-]{43})/.exec(mail.text ?? '')![1]!;
      secrets.push(token);
      const verified = await post(
        customer.headers,
        `/v1/user/accounts/current/email/verifications/${verification.body.id}/confirm`,
        { token },
      );
      assert.equal(verified.status, 200, JSON.stringify(verified.body));

      const national = `7${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
      secrets.push(national);
      const change = await post(customer.headers, '/v1/user/accounts/current/phone/changes', {
        new_mobile_country_code: '254',
        new_mobile_number: national,
        authorization_channel: 'EMAIL',
      });
      assert.equal(change.status, 201, JSON.stringify(change.body));
      const authorization = await until('the e-mailed code', async () => {
        const mails = await emailsTo(customer.user.email);
        return mails.length >= 2 ? /(\d{6}) is your code/.exec(mails.at(-1)!.text ?? '')?.[1] : undefined;
      });
      secrets.push(authorization);
      assert.equal(
        (
          await post(customer.headers, `/v1/user/accounts/current/phone/changes/${change.body.id}/authorize`, {
            otp_code: authorization,
          })
        ).status,
        200,
      );
      const confirmation = await codeSentTo(`+254${national}`);
      secrets.push(confirmation);
      assert.equal(
        (
          await post(customer.headers, `/v1/user/accounts/current/phone/changes/${change.body.id}/confirm`, {
            otp_code: confirmation,
          })
        ).status,
        200,
      );
      await until(
        'COMPLETED change',
        async () =>
          (await get(customer.headers, `/v1/user/accounts/current/phone/changes/${change.body.id}`)).body.status ===
          'COMPLETED',
        20_000,
      );
      await until('a delivery report received', () => api.output().includes('/sms/delivery-reports/[token]'));
    } finally {
      await smsControl('/mode', 'PATCH', { deliveryReportUrl: null });
      await Promise.all([api.stop(), worker.stop()]);
    }
    const logs = api.output() + worker.output();
    assert.ok(logs.includes('/v1/user/accounts/current/activation'), 'the API logged the requests');
    assert.ok(logs.split('\n').length > 20, 'the logs are not empty');
    for (const secret of secrets) {
      const line = logs.split('\n').find((l) => l.includes(secret));
      assert.equal(line, undefined, 'a code, token or key in a log line');
    }
  });
});

import { strict as assert } from 'node:assert';
import { activation, codeSentTo, newApplicant, smsControl } from '../support/current-account';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { until } from '../support/money';

const reportPath = (token: string) => `/v1/current-account/callbacks/sms/delivery-reports/${token}`;
const sendOf = (userId: string) =>
  harness()
    .db('otp_sends')
    .where({ user_id: userId })
    .first('provider_message_id', 'delivery_status', 'delivery_failure_reason');
/** The send once its text went out: the gateway's message id is recorded a moment after the text reached it. */
const sentText = (userId: string) =>
  until('the send recorded', async () => {
    const send = await sendOf(userId);
    return send?.provider_message_id ? send : undefined;
  });
/** A fresh applicant whose activation code's text went out, and the gateway's message id of it. */
async function codeTexted() {
  const customer = await newApplicant();
  await activation.start(customer.headers);
  await codeSentTo(customer.phone);
  const { provider_message_id: id } = await sentText(customer.user.id);
  return { customer, id };
}
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const postReport = (token: string, raw: string, contentType = 'application/x-www-form-urlencoded') =>
  call('POST', reportPath(token), { raw, contentType });

describe('protocol: SMS delivery reports (Africa’s Talking, form-encoded, the URL’s token the credential)', () => {
  afterEach(() => smsControl('/mode', 'PATCH', { deliveryReportUrl: null, delivery: 'Success' }));

  it('the gateway’s report of a code’s text is recorded on its send (Success; Failed with the reason)', async () => {
    const { baseUrl, config } = harness();
    for (const [delivery, reason] of [
      ['Success', null],
      ['Failed', 'DeliveryFailure'],
    ] as const) {
      await smsControl('/mode', 'PATCH', {
        deliveryReportUrl: `${baseUrl}${reportPath(config.SMS_CALLBACK_TOKEN!)}`,
        delivery,
      });
      const customer = await newApplicant();
      assert.equal((await activation.start(customer.headers)).status, 201);
      await codeSentTo(customer.phone);
      const send = await until(`${delivery} recorded`, async () => {
        const row = await sendOf(customer.user.id);
        return row?.delivery_status ? row : undefined;
      });
      assert.equal(send.delivery_status, delivery);
      assert.equal(send.delivery_failure_reason, reason);
    }
  });

  it('a wrong token is 404 and records nothing; a JSON body is 415; an unknown status or a field twice is 400; a report of a text we never sent is acknowledged', async () => {
    const { config } = harness();
    const { customer, id } = await codeTexted();

    const forged = await postReport(
      'not-the-token-at-all-000000000',
      form({ id, status: 'Failed', phoneNumber: customer.phone }),
    );
    assert.equal(forged.status, 404);
    assert.equal((await sendOf(customer.user.id)).delivery_status, null);
    const json = await postReport(
      config.SMS_CALLBACK_TOKEN!,
      JSON.stringify({ id, status: 'Success' }),
      'application/json',
    );
    assert.equal(json.status, 415);
    assert.equal((await postReport(config.SMS_CALLBACK_TOKEN!, form({ id, status: 'Delivered' }))).status, 400);
    assert.equal((await postReport(config.SMS_CALLBACK_TOKEN!, `id=${id}&id=other&status=Success`)).status, 400);
    const stranger = await postReport(config.SMS_CALLBACK_TOKEN!, form({ id: 'ATXid_unknown', status: 'Success' }));
    assert.equal(stranger.status, 200);
    const ok = await postReport(
      config.SMS_CALLBACK_TOKEN!,
      form({
        id,
        status: 'Rejected',
        failureReason: 'UserIsInactive',
        phoneNumber: customer.phone,
        networkCode: '63902',
      }),
    );
    assert.equal(ok.status, 200);
    assert.equal((await sendOf(customer.user.id)).delivery_status, 'Rejected');
  });

  it('reports may come in any order: an interim one (Submitted, Buffered) after the final one leaves it as it is (callback chaos finding)', async () => {
    const { config } = harness();
    const { customer, id } = await codeTexted();
    const report = (status: string, failureReason?: string) =>
      postReport(config.SMS_CALLBACK_TOKEN!, form({ id, status, ...(failureReason && { failureReason }) }));
    assert.equal((await report('Submitted')).status, 200);
    assert.equal((await sendOf(customer.user.id)).delivery_status, 'Submitted', 'an interim report is recorded');
    assert.equal((await report('Failed', 'DeliveryFailure')).status, 200);
    for (const late of ['Buffered', 'Submitted', 'Sent']) assert.equal((await report(late)).status, 200);
    const send = await sendOf(customer.user.id);
    assert.equal(send.delivery_status, 'Failed');
    assert.equal(send.delivery_failure_reason, 'DeliveryFailure');
  });
});

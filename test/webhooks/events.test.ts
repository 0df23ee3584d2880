import { strict as assert } from 'node:assert';
import { randomInt } from 'node:crypto';
import { activatedCustomer, codeSentTo } from '../support/current-account';
import { invoicePdf, readInvoice, registerInvoice, settledInvoice, uploadDocument } from '../support/financing';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { newBorrower, repayAll, takeLoan, testProduct } from '../support/loans';
import { newCustomer, until } from '../support/money';
import { awaitReceived, registerEndpoint, removeEndpoints, type Registered } from '../support/webhooks';

/**
 * The event catalogue: each event is delivered once its state committed, verified by the
 * standardwebhooks package at the receiver, and carries its resource as the API answers it.
 */
describe('webhook events: each carries its resource as the API answers it', () => {
  const made: Registered[] = [];
  after(() => removeEndpoints(made));
  const endpoint = async (types: string[]) => {
    const registered = await registerEndpoint(types);
    made.push(registered);
    return registered;
  };
  const only = async (name: string, id: string, type: string) => {
    const got = (await awaitReceived(name, id, 1, 30_000)).filter((d) => d.type === type);
    assert.equal(got.length, 1, `one ${type}`);
    assert.equal(got[0]!.verified, true);
    return (got[0]!.body as { data: Record<string, unknown> }).data;
  };

  it('kyc.application.completed and current_account.activated, as a customer is verified and activated', async function () {
    this.timeout(60_000);
    const hook = await endpoint(['kyc.application.completed', 'current_account.activated']);
    const customer = await newCustomer(0, { name: 'Webhook Subject' });
    const application = await harness().db('kyc_applications').where({ user_id: customer.user.id }).first('id');
    const status = await call('GET', `/v1/kyc/applications/${application.id}/status`, { headers: customer.headers });
    assert.deepEqual(await only(hook.name, application.id, 'kyc.application.completed'), status.body);
    const activation = await call('GET', '/v1/user/accounts/current/activation', { headers: customer.headers });
    assert.equal(activation.body.status, 'COMPLETED');
    assert.deepEqual(await only(hook.name, activation.body.id, 'current_account.activated'), activation.body);
  });

  it('loan.disbursed, installment.overdue and loan.repaid, along a loan’s life', async function () {
    this.timeout(90_000);
    const hook = await endpoint(['loan.disbursed', 'installment.overdue', 'loan.repaid']);
    const product = await testProduct({ tenure_unit: 'DAYS', tenures: [1], default_tenure: 1 });
    const borrower = await newBorrower();
    const { offer, applied, loanId } = await takeLoan(borrower, { product, amount: 100_000, tenure: 1, unit: 'DAYS' });
    assert.deepEqual(await only(hook.name, offer.id, 'loan.disbursed'), applied);

    const [installment] = (
      await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: borrower.headers })
    ).body.data;
    const overdue = await only(hook.name, installment.id, 'installment.overdue');
    assert.deepEqual(
      { ...overdue, status: overdue.status },
      { ...installment, status: 'OVERDUE', amount: overdue.amount, outstanding: overdue.outstanding },
    );
    await repayAll(borrower);
    const repaid = await only(hook.name, loanId, 'loan.repaid');
    assert.equal(repaid.status, 'REPAID');
    assert.equal(repaid.application_id, offer.id);
    assert.equal(repaid.principal, 100_000);
  });

  it('phone_change.completed once the bank changed the number', async function () {
    this.timeout(60_000);
    const hook = await endpoint(['phone_change.completed']);
    const customer = await activatedCustomer();
    const national = `7${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
    const created = await call('POST', '/v1/user/accounts/current/phone/changes', {
      headers: customer.headers,
      json: { new_mobile_country_code: '254', new_mobile_number: `0${national}`, authorization_channel: 'OLD_MOBILE' },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const path = `/v1/user/accounts/current/phone/changes/${id}`;
    const authorization = await codeSentTo(customer.phone, 2);
    await until('awaiting authorization', async () => {
      const reply = await call('GET', path, { headers: customer.headers });
      return reply.body.status === 'AWAITING_AUTHORIZATION';
    });
    const authorized = await call('POST', `${path}/authorize`, {
      headers: customer.headers,
      json: { otp_code: authorization },
    });
    assert.equal(authorized.status, 200, authorized.text);
    const confirmed = await call('POST', `${path}/confirm`, {
      headers: customer.headers,
      json: { otp_code: await codeSentTo(`+254${national}`) },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    const done = await until('completed', async () => {
      const reply = await call('GET', path, { headers: customer.headers });
      return reply.body.status === 'COMPLETED' && reply.body;
    });
    assert.deepEqual(await only(hook.name, id, 'phone_change.completed'), done);
  });

  it('invoice.extracted once an extraction read the invoice', async () => {
    const hook = await endpoint(['invoice.extracted']);
    const documentId = await uploadDocument(invoicePdf({ 'Invoice number': 'INV-WEBHOOK-1', Total: 'KES 980.00' }));
    const registered = await registerInvoice(documentId);
    assert.equal(registered.status, 201, registered.text);
    const invoice = await settledInvoice(registered.body.id);
    assert.equal(invoice.status, 'EXTRACTED');
    assert.deepEqual(await only(hook.name, invoice.id, 'invoice.extracted'), (await readInvoice(invoice.id)).body);
  });
});

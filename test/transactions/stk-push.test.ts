import { strict as assert } from 'node:assert';
import { accountBalance, ledgerIsBalanced } from '../../db/ledger';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { money, newCustomer, settled, stkPush } from '../support/money';

describe('spec 4.4: POST /v1/transactions/mobilemoney/stk-push', () => {
  it('a push that completes: 201 PENDING, then POSTED with the receipt, and the deposit in the ledger', async () => {
    const customer = await newCustomer(0);
    const reply = await stkPush(customer.headers, { account_id: customer.current, amount: money(150_000), mobile_number: customer.phone });
    assert.equal(reply.status, 201, reply.text);
    assert.equal(reply.body.status, 'PENDING');
    assert.match(reply.body.resource_id, /^trx_/);
    assert.deepEqual(reply.body.amount, money(150_000));
    assert.deepEqual(reply.body.fee_amount, money(0));
    assert.ok(reply.body.transacted_at);
    const done = await settled(customer.headers, reply.body.id);
    assert.equal(done.status, 'POSTED');
    assert.ok(done.mobilemoney_transaction_id);
    assert.ok(done.confirmed_at && done.posted_at);
    assert.equal(done.failed_at, null);
    const balance = await accountBalance(harness().db, customer.current);
    assert.equal(balance.available, 150_000);
    assert.ok(await ledgerIsBalanced(harness().db));
  });
});

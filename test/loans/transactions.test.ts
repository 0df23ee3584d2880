import { randomUUID } from 'node:crypto';
import { strict as assert } from 'node:assert';
import { BACKFILL } from '../../db/migrations/20261208100000_installment_transaction_views';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call, type Reply } from '../support/http';
import { applicantHeaders } from '../support/kyc';
import { newBorrower, repay, takeLoan, testProduct } from '../support/loans';

const TRANSACTION_FIELDS = [
  'amount',
  'confirmed_at',
  'details',
  'failed_at',
  'failure_reason',
  'fee_amount',
  'id',
  'mobilemoney_transaction_id',
  'posted_at',
  'resource_id',
  'status',
  'transacted_at',
];
const ALLOCATION_FIELDS = [
  'allocated_amount',
  'allocated_at',
  'arrears_amount',
  'balance_id',
  'cycle_id',
  'effect',
  'id',
  'interest_amount',
  'position',
  'principal_amount',
  'source',
];

/** One borrower with a long loan and 23 small repayments (each paying part of installment 1), made once for the file. */
let fixture: Promise<{ borrower: Awaited<ReturnType<typeof newBorrower>>; ids: string[]; installment: string }>;
async function makeFixture() {
  const product = await testProduct({ tenure_unit: 'DAYS', tenures: [60], default_tenure: 60 });
  const borrower = await newBorrower();
  await takeLoan(borrower, { product, amount: 500_000, tenure: 60, unit: 'DAYS' });
  const ids: string[] = [];
  // A few at a time: they queue on the loan's run and are allocated in turn.
  for (let batch = 0; batch < 23; batch += 6) {
    const posted = await Promise.all(Array.from({ length: Math.min(6, 23 - batch) }, () => repay(borrower, 1_000)));
    ids.push(...posted.map((p) => p.id as string));
  }
  const installment = (await harness().db('installments').where({ account_id: borrower.credit }).first('id')).id;
  return { borrower, ids, installment };
}
const list = (headers: Record<string, string>, path: string): Promise<Reply> => call('GET', path, { headers });
/** Newest first: by the event sequence, which follows allocation order. */
const expectedOrder = async (ids: string[]) =>
  (await harness().db('loan_transactions').whereIn('id', ids).orderBy('seq', 'desc').select('id')).map((r) => r.id);

describe('spec 4.3: installment transaction lists, keyset-paged', () => {
  before(function () {
    this.timeout(120_000);
    fixture = makeFixture();
    return fixture;
  });

  it('GET …/installments/transactions answers {data: [{transaction, installments}], links} with exactly the spec’s fields', async () => {
    const { borrower, ids } = await fixture;
    const reply = await list(borrower.headers, `/v1/accounts/${borrower.credit}/installments/transactions`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['data', 'links']);
    assert.equal(reply.body.data.length, 20, 'size defaults to 20');
    const [row] = reply.body.data;
    assert.deepEqual(Object.keys(row).sort(), ['installments', 'transaction']);
    assert.deepEqual(Object.keys(row.transaction).sort(), TRANSACTION_FIELDS);
    assert.equal(row.transaction.status, 'POSTED');
    assert.match(row.transaction.resource_id, /^trx_/);
    assert.deepEqual(Object.keys(row.installments[0]).sort(), ALLOCATION_FIELDS);
    assert.equal(row.installments[0].source, 'LIVE');
    assert.deepEqual(
      reply.body.data.map((r: { transaction: { id: string } }) => r.transaction.id),
      (await expectedOrder(ids)).slice(0, 20),
    );
    assert.equal(reply.body.links.prev, null, 'nothing newer than the first page');
    assert.match(reply.body.links.next, /^\/v1\/accounts\/[0-9a-f-]+\/installments\/transactions\?size=20&after=/);
  });

  it('pages forward to the end and back again, every transaction once, links null at both ends', async () => {
    const { borrower, ids } = await fixture;
    const order = await expectedOrder(ids);
    const seen: string[] = [];
    let path: string | null = `/v1/accounts/${borrower.credit}/installments/transactions?size=5`;
    let last: Reply | undefined;
    while (path) {
      last = await list(borrower.headers, path);
      assert.equal(last.status, 200, last.text);
      seen.push(...last.body.data.map((r: { transaction: { id: string } }) => r.transaction.id));
      path = last.body.links.next;
    }
    assert.deepEqual(seen, order);
    assert.equal(last!.body.data.length, 3);
    // Backwards from the last page.
    const back: string[] = [];
    path = last!.body.links.prev;
    while (path) {
      const page = await list(borrower.headers, path);
      assert.equal(page.status, 200, page.text);
      back.unshift(...page.body.data.map((r: { transaction: { id: string } }) => r.transaction.id));
      path = page.body.links.prev;
    }
    assert.deepEqual(back, order.slice(0, 20));
  });

  it('a page stays put while new transactions arrive: they come before the first page', async () => {
    const { borrower } = await fixture;
    const base = `/v1/accounts/${borrower.credit}/installments/transactions?size=3`;
    const first = await list(borrower.headers, base);
    const second = await list(borrower.headers, first.body.links.next);
    const fresh = await repay(borrower, 1_000);
    assert.deepEqual((await list(borrower.headers, first.body.links.next)).body.data, second.body.data);
    const top = await list(borrower.headers, base);
    assert.equal(top.body.data[0].transaction.id, fresh.id, 'the new transaction opens the list');
    // Back from the second page: the same first page, now with something newer before it.
    const back = await list(borrower.headers, second.body.links.prev);
    assert.deepEqual(back.body.data, first.body.data);
    assert.ok(back.body.links.prev);
  });

  it('GET …/installments/{id}/transactions answers {data: [{transaction, allocation}], links}, paged the same way', async () => {
    const { borrower, installment } = await fixture;
    const base = `/v1/accounts/${borrower.credit}/installments/${installment}/transactions`;
    const first = await list(borrower.headers, `${base}?size=10`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(Object.keys(first.body.data[0]).sort(), ['allocation', 'transaction']);
    assert.deepEqual(Object.keys(first.body.data[0].allocation).sort(), ALLOCATION_FIELDS);
    assert.equal(first.body.data[0].allocation.balance_id, installment);
    const all: string[] = [];
    let path: string | null = `${base}?size=10`;
    while (path) {
      const page = await list(borrower.headers, path);
      all.push(...page.body.data.map((r: { allocation: { id: string } }) => r.allocation.id));
      path = page.body.links.next;
    }
    const stored = await harness().db('installment_allocations').where({ installment_id: installment });
    assert.equal(all.length, stored.length);
    assert.equal(new Set(all).size, all.length);
  });

  it('size: 1, 20 and 100 are answered; 0 and 101 are BAD_REQUEST naming query.size', async () => {
    const { borrower } = await fixture;
    const base = `/v1/accounts/${borrower.credit}/installments/transactions`;
    const count = (await harness().db('loan_transactions').where({ account_id: borrower.credit })).length;
    for (const size of [1, 20, 100]) {
      const reply = await list(borrower.headers, `${base}?size=${size}`);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.data.length, Math.min(size, count));
      assert.equal(reply.body.links.next === null, size >= count);
    }
    for (const size of ['0', '101', '-1', '2.5', 'x']) {
      const reply = await list(borrower.headers, `${base}?size=${size}`);
      assert.equal(reply.status, 400, `size=${size}`);
      assert.equal(reply.body.code, 'BAD_REQUEST');
      assert.match(reply.body.description, /^Invalid input: query\.size/);
    }
  });

  it('a tampered or foreign cursor is 400 (not 500); after and before together is the plain "Bad Request"', async () => {
    const { borrower, installment } = await fixture;
    const base = `/v1/accounts/${borrower.credit}/installments/transactions`;
    const cursorOf = (link: string) => new URL(link, 'http://x').searchParams.get('after')!;
    const own = cursorOf((await list(borrower.headers, `${base}?size=2`)).body.links.next);
    // The installment list's cursor, and one hand-made without the list's tag.
    const foreign = cursorOf(
      (await list(borrower.headers, `/v1/accounts/${borrower.credit}/installments/${installment}/transactions?size=2`))
        .body.links.next,
    );
    const decoded = Buffer.from(own, 'base64url').toString();
    const tampered = [
      foreign,
      Buffer.from(decoded.replace(/\.[^.]*$/, '.AAAAAAAAAA')).toString('base64url'),
      Buffer.from(decoded.split('.')[0]!).toString('base64url'),
      'abc',
      Buffer.from('s-1').toString('base64url'),
      Buffer.from('s99999999999999999999').toString('base64url'),
      Buffer.from("s1' or 1=1").toString('base64url'),
      'czE=',
      'x'.repeat(65),
      '%00',
    ];
    for (const cursor of tampered)
      for (const key of ['after', 'before']) {
        const reply = await list(borrower.headers, `${base}?${key}=${cursor}`);
        assert.equal(reply.status, 400, `${key}=${cursor}: ${reply.text}`);
        assert.equal(reply.body.code, 'BAD_REQUEST');
        assert.match(reply.body.description, new RegExp(`^Invalid input: query\\.${key}`));
      }
    // The list's own cursor is read; another position in the same list is the caller's own data.
    assert.equal((await list(borrower.headers, `${base}?after=${own}`)).status, 200);
    const both = await list(borrower.headers, `${base}?after=${own}&before=${own}`);
    assert.equal(both.status, 400);
    assert.deepEqual(both.body, { code: 'BAD_REQUEST', description: 'Bad Request' });
  });

  it("another organization's account, another customer's, or an installment of another account is 404", async () => {
    const { borrower, installment } = await fixture;
    const other = await newBorrower({ funds: 0 });
    const paths = [
      `/v1/accounts/${borrower.credit}/installments/transactions`,
      `/v1/accounts/${borrower.credit}/installments/${installment}/transactions`,
    ];
    for (const path of paths) {
      assert.equal((await list(other.headers, path)).status, 404, `another customer: ${path}`);
      assert.equal(
        (await list(await applicantHeaders(DEMO.users.secondCustomer), path)).status,
        404,
        `another organization: ${path}`,
      );
      // Whatever the query: a cursor this list never gave out tells nothing of another's account.
      assert.equal((await list(other.headers, `${path}?after=bm90LWEtY3Vyc29y`)).status, 404, `cursor: ${path}`);
    }
    const wrongAccount = await list(
      other.headers,
      `/v1/accounts/${other.credit}/installments/${installment}/transactions`,
    );
    assert.equal(wrongAccount.status, 404);
  });
});

describe('spec 4.3: the lists read the items written with each event', () => {
  /** Every page of a list, newest first, as the client reads it. */
  async function everything(headers: Record<string, string>, path: string) {
    const items: unknown[] = [];
    let next: string | null = `${path}?size=2`;
    while (next) {
      const page = await list(headers, next);
      assert.equal(page.status, 200, page.text);
      items.push(...page.body.data);
      next = page.body.links.next;
    }
    return items;
  }

  it('repayments, a reversal and a waiver read the same from record() and from the migration’s rendering of the records', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const operator = await applicantHeaders(DEMO.users.internal);
    const spanning = await repay(borrower, 120_000);
    const reversal = await call(
      'POST',
      `/v1/accounts/${borrower.credit}/installments/transactions/${spanning.id}/reversal`,
      {
        headers: operator,
        json: { reason: 'paid to the wrong account' },
      },
    );
    assert.equal(reversal.status, 201, reversal.text);
    const waiver = await call('POST', `/v1/accounts/${borrower.credit}/installments/waivers`, {
      headers: { ...operator, 'Idempotency-Key': `views-${loanId}` },
      json: { loan_id: loanId, amount: { value: 7_000, currency: 'KES' }, reason: 'goodwill' },
    });
    assert.equal(waiver.status, 201, waiver.text);
    await repay(borrower, 50_000);
    const { db } = harness();
    const installments: string[] = (
      await db('installments').where({ account_id: borrower.credit }).orderBy('position').select('id')
    ).map((r) => r.id);
    const paths = [
      `/v1/accounts/${borrower.credit}/installments/transactions`,
      ...installments.map((id) => `/v1/accounts/${borrower.credit}/installments/${id}/transactions`),
    ];
    const written = await Promise.all(paths.map((path) => everything(borrower.headers, path)));
    assert.equal(written[0]!.length, 4, 'two repayments, a reversal, a waiver');
    assert.deepEqual(
      (written[0] as { transaction: { id: string } }[]).find(
        (item) => item.transaction.id === reversal.body.transaction.id,
      ),
      reversal.body,
      'the reversal reads in the list as it was answered',
    );

    // A history written before the read model: its items rendered by the migration, from the records.
    const events = db('loan_transactions').where({ account_id: borrower.credit }).select('id');
    await db('installment_allocation_views')
      .whereIn('allocation_id', db('installment_allocations').whereIn('event_id', events).select('id'))
      .delete();
    assert.equal(await db('loan_transaction_views').where({ account_id: borrower.credit }).delete(), 4);
    for (const statement of BACKFILL) await db.raw(statement);
    assert.deepEqual(await Promise.all(paths.map((path) => everything(borrower.headers, path))), written);
  });

  it('an event written without its item (code from before the read model) is refused when it commits', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const { db } = harness();
    const { organization_id } = await db('accounts').where({ id: borrower.credit }).first('organization_id');
    const id = randomUUID();
    await assert.rejects(
      db('loan_transactions').insert({
        id,
        resource_id: `trx_${id}`,
        organization_id,
        account_id: borrower.credit,
        kind: 'WAIVER',
        loan_id: loanId,
        amount: 100,
        allocated_amount: 100,
        currency: 'KES',
        effective_at: new Date(),
        created_at: new Date(),
      }),
      /has no list item/,
    );
    assert.equal(await db('loan_transactions').where({ id }).first('id'), undefined);
  });
});

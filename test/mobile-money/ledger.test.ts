import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  accountBalance,
  type JournalKind,
  type Leg,
  ledgerAccounts,
  ledgerIsBalanced,
  postJournal,
} from '../../db/ledger/ledger';
import { harness } from '../support/harness';

/** KES cents. */
const KES = (shillings: number) => shillings * 100;

interface Entry {
  transactionId: string;
  kind: JournalKind;
  currency: string;
  legs: Leg[];
}

function post(entry: Entry): Promise<boolean> {
  return harness().db.transaction((trx) => postJournal(trx, entry));
}

const collection = (accountId: string, amount: number, transactionId: string = randomUUID()): Entry => ({
  transactionId,
  kind: 'COLLECTION',
  currency: 'KES',
  legs: [
    { account: ledgerAccounts.collections, amount },
    { account: ledgerAccounts.customer(accountId), amount: -amount },
  ],
});
const hold = (accountId: string, amount: number, transactionId: string = randomUUID()): Entry => ({
  transactionId,
  kind: 'HOLD',
  currency: 'KES',
  legs: [
    { account: ledgerAccounts.customer(accountId), amount },
    { account: ledgerAccounts.hold(accountId), amount: -amount },
  ],
});
const release = (accountId: string, amount: number, transactionId: string): Entry => ({
  transactionId,
  kind: 'RELEASE',
  currency: 'KES',
  legs: [
    { account: ledgerAccounts.hold(accountId), amount },
    { account: ledgerAccounts.customer(accountId), amount: -amount },
  ],
});

async function entriesOf(db: Knex | Knex.Transaction, transactionId: string) {
  return db('journal_entries').where({ transaction_id: transactionId }).orderBy('kind');
}

async function legsOf(transactionId: string, kind: JournalKind) {
  const rows: { ledger_account: string; amount: string }[] = await harness()
    .db('ledger_legs as l')
    .join('journal_entries as e', 'e.id', 'l.journal_entry_id')
    .where({ 'e.transaction_id': transactionId, 'e.kind': kind })
    .orderBy('l.leg')
    .select('l.ledger_account', 'l.amount');
  return rows.map((row) => ({ account: row.ledger_account, amount: Number(row.amount) }));
}

/** Writes an entry and its legs with plain inserts, bypassing postJournal's checks. */
async function rawEntry(trx: Knex.Transaction, legs: { account: string; amount: number }[]): Promise<string> {
  const transactionId = randomUUID();
  const [entry] = await trx('journal_entries')
    .insert({ transaction_id: transactionId, kind: 'COLLECTION', currency: 'KES' })
    .returning('id');
  // One leg per statement: the check must wait for the commit, not run after each insert.
  for (const [index, leg] of legs.entries()) {
    await trx('ledger_legs').insert({
      journal_entry_id: entry.id,
      leg: index + 1,
      ledger_account: leg.account,
      amount: leg.amount,
    });
  }
  return transactionId;
}

describe('ledger: double-entry postings for mobile money', () => {
  it('an account with no entries has a zero balance, nothing held and nothing available', async () => {
    assert.deepEqual(await accountBalance(harness().db, randomUUID()), { balance: 0, held: 0, available: 0 });
  });

  it('a collection credits the customer: balance and available rise by the amount collected', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const entry = collection(accountId, KES(1500));
    assert.equal(await post(entry), true);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(1500), held: 0, available: KES(1500) });
    assert.deepEqual(await legsOf(entry.transactionId, 'COLLECTION'), entry.legs);

    await post(collection(accountId, 2550));
    assert.deepEqual(await accountBalance(db, accountId), {
      balance: KES(1500) + 2550,
      held: 0,
      available: KES(1500) + 2550,
    });
  });

  it('a hold reduces available but not balance, and a release restores available', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    await post(collection(accountId, KES(1000)));

    const payoutId = randomUUID();
    assert.equal(await post(hold(accountId, KES(300), payoutId)), true);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(1000), held: KES(300), available: KES(700) });

    assert.equal(await post(release(accountId, KES(300), payoutId)), true);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(1000), held: 0, available: KES(1000) });
    assert.deepEqual(
      (await entriesOf(db, payoutId)).map((e: { kind: string }) => e.kind),
      ['HOLD', 'RELEASE'],
    );
  });

  it('a payout after a hold moves the held money to disbursements (and the fee to income) and leaves nothing held', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    await post(collection(accountId, KES(1000)));
    const payoutId = randomUUID();
    const amount = KES(400);
    const fee = 2300;
    await post(hold(accountId, amount + fee, payoutId));
    assert.deepEqual(await accountBalance(db, accountId), {
      balance: KES(1000),
      held: amount + fee,
      available: KES(600) - fee,
    });

    const payoutLegs: Leg[] = [
      { account: ledgerAccounts.hold(accountId), amount: amount + fee },
      { account: ledgerAccounts.disbursements, amount: -amount },
      { account: ledgerAccounts.feeIncome, amount: -fee },
    ];
    assert.equal(await post({ transactionId: payoutId, kind: 'PAYOUT', currency: 'KES', legs: payoutLegs }), true);
    assert.deepEqual(await accountBalance(db, accountId), {
      balance: KES(600) - fee,
      held: 0,
      available: KES(600) - fee,
    });
    assert.deepEqual(await legsOf(payoutId, 'PAYOUT'), payoutLegs);
  });

  it('posting the same (transaction, kind) twice writes one entry and returns false the second time', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const entry = collection(accountId, KES(250));
    assert.equal(await post(entry), true);
    assert.equal(await post(entry), false);
    // A retry with other amounts is still the same posting: it writes nothing.
    assert.equal(await post(collection(accountId, KES(999), entry.transactionId)), false);

    assert.equal((await entriesOf(db, entry.transactionId)).length, 1);
    assert.deepEqual(await legsOf(entry.transactionId, 'COLLECTION'), entry.legs);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(250), held: 0, available: KES(250) });
  });

  it('concurrent posts of the same (transaction, kind) write one entry: exactly one returns true', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const entry = collection(accountId, KES(75));
    const results = await Promise.all([post(entry), post(entry), post(entry)]);
    assert.deepEqual(results.filter(Boolean).length, 1);
    assert.equal((await entriesOf(db, entry.transactionId)).length, 1);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(75), held: 0, available: KES(75) });
  });

  it('postJournal refuses a malformed or unbalanced entry with a clear error before touching the database', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const customer = ledgerAccounts.customer(accountId);
    const good = collection(accountId, 100);
    const cases: [string, Entry, RegExp][] = [
      [
        'unbalanced',
        {
          ...good,
          legs: [
            { account: ledgerAccounts.collections, amount: 100 },
            { account: customer, amount: -90 },
          ],
        },
        /unbalanced, the legs sum to 10/,
      ],
      ['one leg', { ...good, legs: [{ account: customer, amount: 0 + 100 }] }, /at least two legs, got 1/],
      ['no legs', { ...good, legs: [] }, /at least two legs, got 0/],
      [
        'zero amount',
        { ...good, legs: [...good.legs, { account: ledgerAccounts.feeIncome, amount: 0 }] },
        /zero amount/,
      ],
      [
        'fractional amount',
        {
          ...good,
          legs: [
            { account: ledgerAccounts.collections, amount: 10.5 },
            { account: customer, amount: -10.5 },
          ],
        },
        /not a safe integer/,
      ],
      [
        'unsafe integer',
        {
          ...good,
          legs: [
            { account: ledgerAccounts.collections, amount: 2 ** 53 },
            { account: customer, amount: -(2 ** 53) },
          ],
        },
        /not a safe integer/,
      ],
      [
        'NaN',
        {
          ...good,
          legs: [
            { account: ledgerAccounts.collections, amount: NaN },
            { account: customer, amount: NaN },
          ],
        },
        /not a safe integer/,
      ],
      [
        'string amount',
        {
          ...good,
          legs: [
            { account: ledgerAccounts.collections, amount: '100' as unknown as number },
            { account: customer, amount: -100 },
          ],
        },
        /not a safe integer/,
      ],
      [
        'no account',
        {
          ...good,
          legs: [
            { account: '', amount: 100 },
            { account: customer, amount: -100 },
          ],
        },
        /leg 1 has no account/,
      ],
      ['bad transaction id', { ...good, transactionId: 'not-a-uuid' }, /transactionId must be a uuid/],
      ['bad kind', { ...good, kind: 'REFUND' as JournalKind }, /kind must be one of/],
      ['bad currency', { ...good, currency: 'kes' }, /currency must be a three-letter/],
    ];
    // Sums beyond 2^53 are computed exactly: these legs are each safe but do not balance.
    const max = Number.MAX_SAFE_INTEGER;
    cases.push([
      'unbalanced beyond 2^53',
      {
        ...good,
        legs: [
          { account: 'a', amount: max },
          { account: 'b', amount: max },
          { account: 'c', amount: -max },
          { account: 'd', amount: -max + 1 },
        ],
      },
      /unbalanced, the legs sum to 1\b/,
    ]);

    await db.transaction(async (trx) => {
      for (const [name, entry, message] of cases) {
        await assert.rejects(postJournal(trx, entry), message, name);
        // Nothing reached the database: a failed statement would have aborted the transaction.
        assert.equal(
          (await entriesOf(trx, entry.transactionId === 'not-a-uuid' ? good.transactionId : entry.transactionId))
            .length,
          0,
          name,
        );
      }
    });
    await assert.rejects(postJournal(db as unknown as Knex.Transaction, good), /inside a knex transaction/);
    assert.deepEqual(await accountBalance(db, accountId), { balance: 0, held: 0, available: 0 });
  });

  it('the database refuses at commit an entry whose legs do not sum to zero (raw inserts, no postJournal)', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    let transactionId = '';
    await assert.rejects(
      db.transaction(async (trx) => {
        transactionId = await rawEntry(trx, [
          { account: ledgerAccounts.collections, amount: KES(100) },
          { account: ledgerAccounts.customer(accountId), amount: -KES(50) },
        ]);
        // The check is deferred: inside the transaction the legs are there.
        assert.equal(
          (
            await trx('ledger_legs').whereIn(
              'journal_entry_id',
              trx('journal_entries').select('id').where({ transaction_id: transactionId }),
            )
          ).length,
          2,
        );
      }),
      (error: { code?: string; message: string }) => {
        assert.equal(error.code, '23514');
        assert.match(error.message, /is unbalanced: its legs sum to 5000/);
        return true;
      },
    );
    assert.equal((await entriesOf(db, transactionId)).length, 0);
    assert.deepEqual(await accountBalance(db, accountId), { balance: 0, held: 0, available: 0 });
  });

  it('the database refuses at commit an entry with fewer than two legs, or none', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const ids: string[] = [];
    await assert.rejects(
      db.transaction(async (trx) => {
        ids.push(await rawEntry(trx, [{ account: ledgerAccounts.customer(accountId), amount: -KES(10) }]));
      }),
      /has 1 leg\(s\); a balanced entry needs at least two/,
    );
    await assert.rejects(
      db.transaction(async (trx) => {
        ids.push(await rawEntry(trx, []));
      }),
      /has 0 leg\(s\); a balanced entry needs at least two/,
    );
    for (const id of ids) assert.equal((await entriesOf(db, id)).length, 0);
  });

  it('the database accepts a balanced entry written leg by leg with raw inserts (checked at commit, not per statement)', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const transactionId = await db.transaction((trx) =>
      rawEntry(trx, [
        { account: ledgerAccounts.collections, amount: KES(30) },
        { account: ledgerAccounts.customer(accountId), amount: -KES(20) },
        { account: ledgerAccounts.customer(accountId), amount: -KES(10) },
      ]),
    );
    assert.equal((await entriesOf(db, transactionId)).length, 1);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(30), held: 0, available: KES(30) });
  });

  it('ledger legs and journal entries are append-only: UPDATE, DELETE and TRUNCATE are refused', async () => {
    const { db } = harness();
    const accountId = randomUUID();
    const entry = collection(accountId, KES(60));
    await post(entry);
    const [journal] = await entriesOf(db, entry.transactionId);

    await assert.rejects(
      db('ledger_legs').where({ journal_entry_id: journal.id, leg: 1 }).update({ amount: 1 }),
      /ledger_legs is append-only: UPDATE/,
    );
    await assert.rejects(
      db('ledger_legs').where({ journal_entry_id: journal.id }).update({ ledger_account: 'elsewhere' }),
      /ledger_legs is append-only: UPDATE/,
    );
    await assert.rejects(
      db('ledger_legs').where({ journal_entry_id: journal.id }).delete(),
      /ledger_legs is append-only: DELETE/,
    );
    await assert.rejects(
      db('journal_entries').where({ id: journal.id }).update({ kind: 'HOLD' }),
      /journal_entries is append-only: UPDATE/,
    );
    await assert.rejects(
      db('journal_entries').where({ id: journal.id }).delete(),
      /journal_entries is append-only: DELETE/,
    );
    await assert.rejects(db.raw('truncate ledger_legs'), /ledger_legs is append-only: TRUNCATE/);

    assert.deepEqual(await legsOf(entry.transactionId, 'COLLECTION'), entry.legs);
    assert.deepEqual(await accountBalance(db, accountId), { balance: KES(60), held: 0, available: KES(60) });
  });

  it('ledgerIsBalanced reports an entry that does not sum to zero (triggers bypassed, rolled back)', async function () {
    const { db } = harness();
    const { rows } = await db.raw<{ rows: { superuser: string }[] }>(
      "select current_setting('is_superuser') as superuser",
    );
    if (rows[0]?.superuser !== 'on') this.skip(); // session_replication_role needs a superuser
    const rollback = new Error('rollback');
    await assert.rejects(
      db.transaction(async (trx) => {
        await trx.raw('set local session_replication_role = replica'); // no triggers fire
        await rawEntry(trx, [
          { account: ledgerAccounts.collections, amount: 1 },
          { account: ledgerAccounts.customer(randomUUID()), amount: -2 },
        ]);
        assert.equal(await ledgerIsBalanced(trx), false);
        throw rollback;
      }),
      (error) => error === rollback,
    );
  });

  it('the whole ledger balances after all of the above: every entry and every currency sums to zero', async () => {
    assert.equal(await ledgerIsBalanced(harness().db), true);
  });
});

import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { DEMO } from '../../db/seeds/demo';
import { createOffer } from '../../db/loans/applications';
import { findProduct, offerTerms } from '../../db/loans/products';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { workflowIds } from '../../workflows/ids';
import { acceptOfferUpdate, type LoanOfferInput } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { applyPartnerB, loanOf, newBorrower } from '../support/loans';
import { balanceOf, journalKinds, until } from '../support/money';
import { spawnWorker } from '../support/processes';

/** A signing key for a spawned worker's service tokens. */
const signingKey = async () => JSON.stringify(await generateServiceSigningKey());

/** A fresh borrower's offer of the standard product, open for `openMs`, and its run's input. */
async function newOffer(openMs: number) {
  const { db } = harness();
  const borrower = await newBorrower({ funds: 100_000 });
  const organizationId = DEMO.organizations.demo.id;
  const product = (await findProduct(db, organizationId, 'standard'))!;
  const made = await createOffer(
    db,
    organizationId,
    {
      id: randomUUID(),
      resource_id: `lapp_${randomBytes(12).toString('base64url')}`,
      user_id: borrower.user.id,
      product_id: product.id,
      product_code: product.code,
      account_id: borrower.credit,
      current_account_id: borrower.current,
      loan_amount: 1_000_000,
      tenure_duration: 4,
      tenure_unit: 'WEEKS',
      terms: offerTerms(product),
      currency: 'KES',
      expires_at: new Date(Date.now() + openMs),
      day_ms: 86_400_000,
    },
    new Date(),
  );
  const offer = made!.row;
  const input: LoanOfferInput = {
    organizationId,
    applicationId: offer.id,
    loanAmount: 1_000_000,
    terms: offer.terms,
    expiresAt: offer.expires_at.toISOString(),
    dayMs: 86_400_000,
  };
  return { borrower, offer, input, workflowId: workflowIds.loanApplication(offer.id) };
}

const applicationStatus = async (applicationId: string): Promise<string> =>
  (await harness().db('loan_applications').where({ id: applicationId }).first('status')).status;

/** Kills a spawned worker the hard way and waits until it is gone. */
async function killed(worker: Awaited<ReturnType<typeof spawnWorker>>) {
  worker.child.kill('SIGKILL');
  const [, signal] = await worker.exited;
  assert.equal(signal, 'SIGKILL');
}

describe('durability: the worker process dies in the middle of taking a loan offer', () => {
  it('killed once the loan was made, before the update answered: a new worker finishes, the collateral is held once and the principal disbursed once', async function () {
    this.timeout(150_000);
    const { client, db } = harness();
    const key = await signingKey();
    const taskQueue = `loan-crash-${randomBytes(4).toString('hex')}`;
    const { borrower, offer, input, workflowId } = await newOffer(3_600_000);
    const first = await spawnWorker(taskQueue, key);
    const workers = [first];
    try {
      await first.running();
      const handle = await client.workflow.start('loanApplication', { taskQueue, workflowId, args: [input] });
      const updateId = randomUUID();
      const taken = { loanAmount: 500_000, tenure: 2, collateralAmount: 50_000 };
      // The first attempt's answer is lost with the worker; the client tries again with the same update id.
      const firstTry = handle.executeUpdate(acceptOfferUpdate, { args: [taken], updateId }).catch(() => undefined);
      await until(
        'the loan made',
        async () => (await db('loans').where({ application_id: offer.id }).first()) !== undefined,
        30_000,
      );
      await killed(first);

      const second = await spawnWorker(taskQueue, key);
      workers.push(second);
      await second.running();
      const answer = await handle.executeUpdate(acceptOfferUpdate, { args: [taken], updateId });
      await firstTry;
      const loans = await db('loans').where({ application_id: offer.id });
      assert.equal(loans.length, 1, 'one loan');
      assert.equal(answer.loanId, loans[0].id);
      assert.equal(await handle.result(), 'ACCEPTED');
      assert.deepEqual(await journalKinds(answer.loanId), ['COLLATERAL_HOLD', 'DISBURSEMENT', 'INTEREST'], 'each once');
      // 1,000.00 in, 500.00 held, 5,000.00 disbursed.
      assert.deepEqual(await balanceOf(borrower.current), { balance: 600_000, held: 50_000, available: 550_000 });
      assert.equal((await db('loan_applications').where({ id: offer.id }).first()).status, 'DISBURSED');
      assert.ok(await ledgerIsBalanced(db));
      // The loan's own run lives on (abandoned by its parent): stop it with the test's worker.
      await client.workflow.getHandle(workflowIds.loan(answer.loanId)).terminate('test done');
      await second.stop();
    } finally {
      for (const worker of workers)
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });
});

/** What a lost-Update test takes: 5,000.00 over two weeks, 500.00 of collateral, from 1,000.00. */
const TAKEN = {
  loan_amount: 500_000,
  tenure: { duration: 2, unit: 'WEEKS' },
  collateral_amount: 50_000,
};

/**
 * An acceptance whose Update died after its first step committed, and the offer's run that never
 * recorded it. The offer (open for `openMs`) is taken through the API on a worker of its own with
 * the disbursement held (a trigger); once the loan is made and the collateral held, the worker is
 * killed and the run terminated, as when the server aborts an Update its dead worker never
 * recorded. `restart` starts the offer's run again, on the harness's worker, knowing nothing of
 * the acceptance; `release` lets the disbursement through.
 */
async function acceptanceWithLostUpdate(openMs: number) {
  const { client, db, taskQueue } = harness();
  const ownQueue = `loan-lost-${randomBytes(4).toString('hex')}`;
  const worker = await spawnWorker(ownQueue, await signingKey());
  await worker.running();
  const { borrower, offer, input, workflowId } = await newOffer(openMs);
  const applicationId = offer.id;
  const body = { application_id: applicationId, ...TAKEN };
  const key = `lost-update-${applicationId}`;
  const hold = `hold_disbursement_${applicationId.replaceAll('-', '')}`;
  const release = async () => {
    await db.raw(`drop trigger if exists ${hold} on journal_entries`);
    await db.raw(`drop function if exists ${hold}()`);
  };
  const status = () => applicationStatus(applicationId);
  try {
    await client.workflow.start('loanApplication', { taskQueue: ownQueue, workflowId, args: [input] });
    await db.raw(`create function ${hold}() returns trigger language plpgsql as $$
      begin
        if new.kind = 'DISBURSEMENT' and new.transaction_id in
           (select id from loans where application_id = '${applicationId}') then
          raise exception 'disbursement held by the test';
        end if;
        return new;
      end $$`);
    await db.raw(`create trigger ${hold} before insert on journal_entries for each row execute function ${hold}()`);
    const first = applyPartnerB(borrower.headers, body, key);
    await until('the acceptance committed', async () => (await status()) === 'ACCEPTED', 30_000);
    await killed(worker);
    await client.workflow.getHandle(workflowId).terminate('the Update is lost');
    assert.notEqual((await first).status, 200, 'the first execution failed with its Update');
    assert.equal(await status(), 'ACCEPTED', 'taken, never disbursed');
  } catch (error) {
    await release();
    throw error;
  } finally {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
  }
  return {
    borrower,
    applicationId,
    body,
    key,
    workflowId,
    release,
    restart: () => client.workflow.start('loanApplication', { taskQueue, workflowId, args: [input] }),
  };
}

/**
 * The acceptance finished exactly once: DISBURSED, its entries each once (1,000.00 in, 500.00
 * held, 5,000.00 disbursed), the ledger balanced, and the loan's own run going. Answers the loan.
 */
async function finishedOnce(applicationId: string, currentAccountId: string): Promise<string> {
  const { client, db } = harness();
  const loanId = await loanOf(applicationId);
  assert.equal(await applicationStatus(applicationId), 'DISBURSED');
  assert.deepEqual(await journalKinds(loanId), ['COLLATERAL_HOLD', 'DISBURSEMENT', 'INTEREST'], 'each once');
  assert.deepEqual(await balanceOf(currentAccountId), { balance: 600_000, held: 50_000, available: 550_000 });
  assert.ok(await ledgerIsBalanced(db));
  const run = await client.workflow.getHandle(workflowIds.loan(loanId)).describe();
  assert.equal(run.status.name, 'RUNNING', "the loan's own run");
  return loanId;
}

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** Waits until a run's history has an event `found` accepts. */
const untilHistory = (workflowId: string, what: string, found: (event: HistoryEvent) => unknown) =>
  until(
    what,
    async () => (await harness().client.workflow.getHandle(workflowId).fetchHistory()).events?.some(found),
    30_000,
    200,
  );

describe('durability: taking an offer whose Update was lost after its first step committed', () => {
  it('the same keyed apply again finishes the acceptance (the same Update, every step finding its own work): 200 DISBURSED, never an ACCEPTED loan left undisbursed', async function () {
    this.timeout(60_000);
    const { client } = harness();
    const lost = await acceptanceWithLostUpdate(3_600_000);
    try {
      await lost.release();
      await lost.restart();
      const again = await applyPartnerB(lost.borrower.headers, lost.body, lost.key);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.status, 'DISBURSED', JSON.stringify(again.body));
      const loanId = await finishedOnce(lost.applicationId, lost.borrower.current);
      await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('test done');
    } finally {
      await lost.release();
    }
  });
});

describe('durability: a loan acceptance whose Update died is finished exactly once, retried or not', () => {
  /** The offers are open for 15 s: taken within it, their runs reach the expiry within the test. */
  const OPEN_MS = 15_000;

  it("never retried: the run finishes it at the offer's expiry (loan made once, collateral held once, principal disbursed once, the loan's run started); the keyed apply later answers 200 DISBURSED", async function () {
    this.timeout(90_000);
    const { client } = harness();
    const lost = await acceptanceWithLostUpdate(OPEN_MS);
    try {
      await lost.release();
      const handle = await lost.restart();
      assert.equal(await handle.result(), 'ACCEPTED');
      const loanId = await finishedOnce(lost.applicationId, lost.borrower.current);
      const later = await applyPartnerB(lost.borrower.headers, lost.body, lost.key);
      assert.equal(later.status, 200, later.text);
      assert.equal(later.body.status, 'DISBURSED', JSON.stringify(later.body));
      await recordHistory(lost.workflowId, 'loanApplication-lost-acceptance-finished-at-expiry');
      await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('test done');
    } finally {
      await lost.release();
    }
  });

  it('retried while the run finishes it at the expiry: the same Update waits for the run and answers 200 DISBURSED, nothing moving twice', async function () {
    this.timeout(90_000);
    const { client } = harness();
    const lost = await acceptanceWithLostUpdate(OPEN_MS);
    try {
      const handle = await lost.restart();
      await untilHistory(
        lost.workflowId,
        "the run's close paying out the loan (held)",
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'disburseLoan',
      );
      const retried = applyPartnerB(lost.borrower.headers, lost.body, lost.key);
      await untilHistory(
        lost.workflowId,
        'the retried Update admitted',
        (event) => event.workflowExecutionUpdateAcceptedEventAttributes,
      );
      await lost.release();
      const again = await retried;
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.status, 'DISBURSED', JSON.stringify(again.body));
      assert.equal(await handle.result(), 'ACCEPTED');
      const loanId = await finishedOnce(lost.applicationId, lost.borrower.current);
      await recordHistory(lost.workflowId, 'loanApplication-lost-acceptance-retried-during-close');
      await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('test done');
    } finally {
      await lost.release();
    }
  });
});

import { randomBytes, randomUUID } from 'node:crypto';
import { createStatusQuery } from '../../db/mobile-money/send-money-status';
import type { Org } from './authorization-matrix';
import {
  db,
  type Exercise,
  first,
  type Fixture,
  type Instance,
  perMember,
  problem,
  row,
  type Rows,
} from './authorization-exercise';
import { type Member, MEMBER_ORGANIZATION, type World } from './authorization-world';
import { money } from './money';

// The matrix's exercises of the mobile-money and loan routes (see authorization-exercise.ts).

// ---------------------------------------------------------------------------------------------
// Mobile money

const moneyTargets = async (world: World): Promise<Fixture> => {
  const house = await world.moneyHousehold();
  return {
    subject: house.customer.person,
    targets: perMember(house, (m) => ({ account: m.accounts.current, phone: m.person.phone, push: m.push.id })),
  };
};
const movement = (type: 'STK_PUSH' | 'SEND_MONEY'): Exercise => ({
  prepare: moneyTargets,
  request: ({ target }) => ({
    json: {
      account_id: target!.ids.account,
      amount: money(10_000),
      // A deposit comes from the owner's number; a payout goes to an unregistered one (it fails, nothing moves).
      mobile_number: type === 'STK_PUSH' ? target!.ids.phone : '+254712345678',
    },
  }),
  rows: (target) => [{ table: 'transactions', where: { account_id: target!.ids.account! }, columns: ['id'] }],
  async done({ target }, reply) {
    const created = await row('transactions', { id: reply.body.id });
    return problem(created?.account_id === target!.ids.account && created?.type === type, 'no such transaction');
  },
});

const transaction: Exercise = {
  prepare: moneyTargets,
  request: ({ target }) => ({ params: { id: target!.ids.push! } }),
  shows: ({ target }, reply) => problem(reply.body.id === target!.ids.push, `id ${reply.body.id}`),
};

/** A callback to the customer's transaction: its own URL token, another's token, another organization's transaction. */
const moneyCallback = (kind: 'stk' | 'result' | 'timeout'): Exercise => ({
  async prepare(world) {
    const house = await world.moneyHousehold();
    const of = (member: Member) =>
      kind === 'stk' ? house[member].push : house[member].payouts[kind === 'result' ? 0 : 1]!;
    const own = of('customer');
    const instance = (label: string, id: string, token: string, genuine: boolean): Instance => ({
      label,
      genuine,
      ids: { id, token },
      secrets: [],
    });
    return {
      targets: [
        instance('its own URL token', own.id, own.token, true),
        instance("another transaction's token", own.id, of('peer').token, false),
        instance("another organization's transaction", of('foreign').id, own.token, false),
      ],
    };
  },
  request: ({ target }) => {
    const { id, token } = target!.ids as { id: string; token: string };
    const result = {
      Result: {
        ResultType: 0,
        ResultCode: kind === 'timeout' ? 'SVC0403' : 2040,
        ResultDesc: 'authorization matrix',
        OriginatorConversationID: id,
        ConversationID: 'AG_matrix',
      },
    };
    // Refusals, so a callback to a FAILED transaction is LATE (a payment would be PAID_AFTER_FAILURE, escalated).
    const stk = {
      Body: {
        stkCallback: { MerchantRequestID: 'x', CheckoutRequestID: 'ws_CO_x', ResultCode: 1032, ResultDesc: 'x' },
      },
    };
    return { params: { id, token }, json: kind === 'stk' ? stk : result };
  },
  rows: (target) => [{ table: 'mobile_money_callbacks', where: { transaction_ref: target!.ids.id! }, columns: ['id'] }],
  async done({ target }, _reply, _context, since) {
    const stored = await first(
      db()('mobile_money_callbacks')
        .where({ transaction_ref: target!.ids.id })
        .where('received_at', '>=', since)
        .select('disposition'),
    );
    return problem(stored?.disposition === 'LATE', `recorded ${stored?.disposition}`);
  },
});

/**
 * A payout status query's Result or queue timeout (each query has its own URL token): the
 * customer's query with its own token, another query's token, another organization's query.
 */
const statusCallback = (kind: 'result' | 'timeout'): Exercise => ({
  async prepare(world) {
    const house = await world.moneyHousehold();
    const asked = async (member: Member) => {
      const payout = house[member].payouts[kind === 'result' ? 2 : 3]!;
      const query = {
        id: randomUUID(),
        transaction_id: payout.id,
        organization_id: house[member].person.organizationId,
        token: randomBytes(24).toString('base64url'),
        asked_at: new Date(),
      };
      await createStatusQuery(db(), query);
      return { ...query, transaction: payout.id };
    };
    const [own, peer, foreign] = [await asked('customer'), await asked('peer'), await asked('foreign')];
    const instance = (label: string, query: typeof own, token: string, genuine: boolean): Instance => ({
      label,
      genuine,
      ids: { id: query.id, token, transaction: query.transaction },
      secrets: [],
    });
    return {
      targets: [
        instance('its own URL token', own, own.token, true),
        instance("another query's token", own, peer.token, false),
        instance("another organization's query", foreign, own.token, false),
      ],
    };
  },
  // "Not found", so a Result for a FAILED payout is LATE (a completed one would be PAID_AFTER_FAILURE).
  request: ({ target }) => ({
    params: { id: target!.ids.id!, token: target!.ids.token! },
    json: {
      Result: {
        ResultType: 0,
        ResultCode: '2032',
        ResultDesc: 'authorization matrix',
        OriginatorConversationID: '1-2-3',
        ConversationID: 'AG_matrix',
      },
    },
  }),
  rows: (target) => [
    { table: 'mobile_money_callbacks', where: { transaction_ref: target!.ids.transaction! }, columns: ['id'] },
  ],
  async done({ target }, _reply, _context, since) {
    const stored = await first(
      db()('mobile_money_callbacks')
        .where({ transaction_ref: target!.ids.transaction })
        .where('received_at', '>=', since)
        .select('disposition'),
    );
    return problem(stored?.disposition === 'LATE', `recorded ${stored?.disposition}`);
  },
});

// ---------------------------------------------------------------------------------------------
// Loans

/** Eligibility and terms: the caller itself, or a borrower of either organization named in user_id. */
const offers = (withPath: boolean): Exercise => ({
  async prepare(world) {
    const house = await world.borrowers();
    const target = (label: string, borrower: 'caller' | Member, pathOrganization?: Org): Instance => ({
      label,
      pathOrganization,
      borrower: borrower === 'caller' ? 'caller' : MEMBER_ORGANIZATION[borrower],
      ids: {
        ...(borrower !== 'caller' && { user_id: house[borrower].person.id }),
        ...(pathOrganization && { organization: world.organizations[pathOrganization] }),
      },
      secrets: borrower === 'caller' ? [] : [house[borrower].person.email, house[borrower].person.phone],
    });
    // "The organization" is the matrix's own; the borrower named is the body's user_id (none: the caller itself).
    const targets = withPath
      ? [
          target("itself, the organization's path", 'caller', 'own'),
          target("itself, the other organization's path", 'caller', 'other'),
          target("the organization's borrower, its path", 'peer', 'own'),
          target("the other organization's borrower, its path", 'foreign', 'other'),
          target("the other organization's borrower, the organization's path", 'foreign', 'own'),
        ]
      : [
          target('itself', 'caller'),
          target("the organization's borrower", 'peer'),
          target("the other organization's borrower", 'foreign'),
        ];
    return { subject: house.customer.person, targets };
  },
  request: ({ target }) => ({
    params: target!.ids.organization ? { organization: target!.ids.organization } : undefined,
    json: target!.ids.user_id ? { user_id: target!.ids.user_id } : {},
  }),
  rows: (target, people) => [
    {
      table: 'loan_applications',
      where: { user_id: target!.ids.user_id ? [target!.ids.user_id] : people },
      columns: ['id', 'status'],
    },
  ],
  async done({ target, person }, reply) {
    const offer = await row('loan_applications', { id: reply.body.id });
    const borrower = target!.ids.user_id ?? person?.id;
    return problem(offer?.user_id === borrower && offer?.status === 'APPROVED', 'no open offer for the borrower');
  },
});

/** Taking an offer: the customer's, its organization's borrower's, another organization's. */
const apply = (legacy: boolean): Exercise => ({
  async prepare(world) {
    const offerFor = async (org: Org) => {
      const borrower = await world.borrower(org);
      return { ...borrower, offer: await world.offerOf(borrower) };
    };
    const [customer, peer, foreign] = await Promise.all([offerFor('own'), offerFor('own'), offerFor('other')]);
    const targets = perMember({ customer, peer, foreign }, (m) => ({ application_id: m.offer, user_id: m.person.id }));
    return {
      subject: customer.person,
      targets,
      // Each allowed apply takes an offer: another borrower's in the same organization.
      fresh: async (target) => {
        const made = await offerFor(target.organization!);
        return { ...target, ids: { application_id: made.offer, user_id: made.person.id } };
      },
    };
  },
  request: ({ target }) =>
    legacy
      ? {
          params: { application_id: target!.ids.application_id! },
          json: { loan_amount: 100_000, tenure: 4, collateral_amount: 10_000 },
        }
      : {
          json: {
            application_id: target!.ids.application_id,
            loan_amount: 100_000,
            tenure: { duration: 4, unit: 'WEEKS' },
            collateral_amount: 10_000,
          },
        },
  rows: (target): Rows[] => [
    { table: 'loan_applications', where: { id: target!.ids.application_id! }, columns: ['status', 'loan_id'] },
    { table: 'loans', where: { user_id: target!.ids.user_id! }, columns: ['id'] },
  ],
  async done({ target }) {
    const offer = await row('loan_applications', { id: target!.ids.application_id });
    return problem(offer?.status === 'DISBURSED' && offer.loan_id !== null, `the offer is ${offer?.status}`);
  },
});

const loanTargets = async (world: World, mismatch?: 'installment' | 'repayment' | 'loan'): Promise<Fixture> => {
  const house = await world.loanHousehold();
  const targets = perMember(
    house,
    (m) => ({
      account: m.accounts.credit,
      installment: m.installmentId,
      repayment: m.repaymentId,
      loan: m.loanId,
      accounts: m.accounts.credit,
    }),
    (m) => [m.loanId, m.installmentId, m.repaymentId],
  );
  if (mismatch) {
    // The customer's account, naming its organization's peer's installment (or repayment, or loan).
    const [own, peer] = targets as [Instance, Instance];
    targets.push({
      ...own,
      label: `the customer's own account, another customer's ${mismatch}`,
      mismatch: true,
      ids: { ...own.ids, [mismatch]: peer.ids[mismatch]!, accounts: [own.ids.account, peer.ids.account].join(',') },
      secrets: [...own.secrets, ...peer.secrets],
    });
  }
  return { subject: house.customer.person, targets };
};
const installments = (list: 'schedule' | 'transactions' | 'allocations'): Exercise => ({
  prepare: (world) => loanTargets(world, list === 'allocations' ? 'installment' : undefined),
  request: ({ target }) => ({
    params: { accountId: target!.ids.account!, id: target!.ids.installment! },
  }),
  shows({ target }, reply) {
    const text = JSON.stringify(reply.body);
    const expected = list === 'transactions' ? target!.ids.repayment! : target!.ids.installment!;
    return problem(text.includes(expected), `the answer does not show ${expected}`);
  },
});
const servicingRows = (target: Instance | undefined): Rows[] => [
  { table: 'loan_transactions', where: { account_id: target!.ids.accounts!.split(',') }, columns: ['id', 'kind'] },
];
const reversal: Exercise = {
  prepare: (world) => loanTargets(world, 'repayment'),
  request: ({ target }) => ({
    params: { accountId: target!.ids.account!, transactionId: target!.ids.repayment! },
    json: { reason: 'matrix' },
  }),
  rows: servicingRows,
  async done({ target }) {
    const reversed = await row('loan_transactions', { reverses_id: target!.ids.repayment, kind: 'REVERSAL' });
    return problem(reversed !== undefined, 'no reversal of the repayment');
  },
};
const waiver: Exercise = {
  prepare: (world) => loanTargets(world, 'loan'),
  request: ({ target }) => ({
    params: { accountId: target!.ids.account! },
    headers: { 'Idempotency-Key': randomUUID() },
    json: { loan_id: target!.ids.loan, amount: money(100), reason: 'matrix' },
  }),
  rows: servicingRows,
  async done({ target }, reply) {
    const waived = await row('loan_transactions', { id: reply.body.transaction?.id, kind: 'WAIVER' });
    return problem(waived?.loan_id === target!.ids.loan, 'no waiver on the loan');
  },
};

export const MONEY_EXERCISES: Record<string, Exercise> = {
  'POST /v1/transactions/mobilemoney/stk-push': movement('STK_PUSH'),
  'POST /v1/transactions/mobilemoney/send-money': movement('SEND_MONEY'),
  'GET /v1/transactions/{id}': transaction,
  'POST /v1/transactions/mobilemoney/callbacks/stk/{id}/{token}': moneyCallback('stk'),
  'POST /v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/result': moneyCallback('result'),
  'POST /v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/timeout': moneyCallback('timeout'),
  'POST /v1/transactions/mobilemoney/callbacks/b2c-status/{id}/{token}/result': statusCallback('result'),
  'POST /v1/transactions/mobilemoney/callbacks/b2c-status/{id}/{token}/timeout': statusCallback('timeout'),

  'POST /v1/accounts/loan/applications/partner-a': offers(false),
  'POST /v1/accounts/loan/applications/{organization}': offers(true),
  'POST /v1/accounts/loan/applications/partner-b': apply(false),
  'POST /v1/accounts/credit/applications/{application_id}/apply': apply(true),
  'GET /v1/accounts/{accountId}/installments': installments('schedule'),
  'GET /v1/accounts/{accountId}/installments/transactions': installments('transactions'),
  'GET /v1/accounts/{accountId}/installments/{id}/transactions': installments('allocations'),
  'POST /v1/accounts/{accountId}/installments/transactions/{transactionId}/reversal': reversal,
  'POST /v1/accounts/{accountId}/installments/waivers': waiver,
};

import { strict as assert } from 'node:assert';
import {
  ALLOCATION_STRATEGY,
  allocate,
  inOrder,
  penaltyAmount,
  penaltyDays,
  type Allocation,
  type Obligation,
  type PenaltyTerms,
} from '../../domain/loans/allocation';

type Component = 'penalties' | 'interest' | 'principal';
const ALL: readonly Component[] = ['penalties', 'interest', 'principal'];
const WAIVER: readonly Component[] = ['penalties', 'interest'];

const owing = (
  installmentId: string,
  dueDate: string,
  amounts: { penalties?: number; interest?: number; principal?: number },
  { position = 1, cycleOrder = 0, loanId = 'loan-1' }: { position?: number; cycleOrder?: number; loanId?: string } = {},
): Obligation => ({
  installmentId,
  loanId,
  position,
  dueDate,
  cycleOrder,
  penalties: amounts.penalties ?? 0,
  interest: amounts.interest ?? 0,
  principal: amounts.principal ?? 0,
});

const owedTotal = (o: Obligation) => o.penalties + o.interest + o.principal;
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
/** [installmentId, arrears, interest, principal, settles] of every allocation, in order. */
const rows = (allocations: Allocation[]) =>
  allocations.map((a) => [a.installmentId, a.arrears, a.interest, a.principal, a.settles]);

/** Tiny deterministic PRNG (mulberry32), so the property tests need no dependency and always replay. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const intBetween = (random: () => number, min: number, max: number) => min + Math.floor(random() * (max - min + 1));

describe('spec 5 allocation: PENALTIES_INTEREST_PRINCIPAL_OLDEST_FIRST worked examples', () => {
  // Two cycles of the same account: cycle 0 (older) weekly from 2026-12-07, cycle 1 weekly from 2026-12-14.
  const account = (): Obligation[] => [
    owing('c1-1', '2026-12-14', { penalties: 5, interest: 100, principal: 1_000 }, { position: 1, cycleOrder: 1 }),
    owing('c0-2', '2026-12-14', { penalties: 0, interest: 100, principal: 1_000 }, { position: 2, cycleOrder: 0 }),
    owing('c0-1', '2026-12-07', { penalties: 10, interest: 100, principal: 1_000 }, { position: 1, cycleOrder: 0 }),
    owing('c1-2', '2026-12-21', { penalties: 0, interest: 100, principal: 1_000 }, { position: 2, cycleOrder: 1 }),
  ];

  it('names the strategy PENALTIES_INTEREST_PRINCIPAL_OLDEST_FIRST', () => {
    assert.equal(ALLOCATION_STRATEGY, 'PENALTIES_INTEREST_PRINCIPAL_OLDEST_FIRST');
  });

  it('orders installments by due date, then the older cycle on the same date, then position', () => {
    assert.deepEqual(
      inOrder(account()).map((o) => o.installmentId),
      ['c0-1', 'c0-2', 'c1-1', 'c1-2'],
    );
    const sameDayAndCycle = [
      owing('p3', '2026-12-07', {}, { position: 3 }),
      owing('p1', '2026-12-07', {}, { position: 1 }),
      owing('p2', '2026-12-07', {}, { position: 2 }),
    ];
    assert.deepEqual(
      inOrder(sameDayAndCycle).map((o) => o.installmentId),
      ['p1', 'p2', 'p3'],
    );
  });

  it('the due date wins over cycle order and position: an older date of a newer cycle comes first', () => {
    const result = allocate(50, [
      owing('old-cycle-late', '2026-12-21', { interest: 50 }, { position: 1, cycleOrder: 0 }),
      owing('new-cycle-early', '2026-12-14', { interest: 50 }, { position: 9, cycleOrder: 5 }),
    ]);
    assert.deepEqual(rows(result.allocations), [['new-cycle-early', 0, 50, 0, true]]);
  });

  it('within an installment, penalties (as arrears) are paid before interest, and interest before principal', () => {
    const owed = [owing('i1', '2026-12-07', { penalties: 30, interest: 20, principal: 100 })];
    assert.deepEqual(rows(allocate(25, owed).allocations), [['i1', 25, 0, 0, false]]);
    assert.deepEqual(rows(allocate(40, owed).allocations), [['i1', 30, 10, 0, false]]);
    assert.deepEqual(rows(allocate(70, owed).allocations), [['i1', 30, 20, 20, false]]);
  });

  it('a partial payment settles the oldest installments in full and part-pays the next, leaving later ones untouched', () => {
    // c0-1 owes 1 110, c0-2 owes 1 100: 1 110 + 1 100 + 50 reaches into c1-1's penalties and interest.
    const result = allocate(2_260, account());
    assert.deepEqual(rows(result.allocations), [
      ['c0-1', 10, 100, 1_000, true],
      ['c0-2', 0, 100, 1_000, true],
      ['c1-1', 5, 45, 0, false],
    ]);
    assert.deepEqual(
      result.allocations.map((a) => [a.loanId, a.position, a.allocated]),
      [
        ['loan-1', 1, 1_110],
        ['loan-1', 2, 1_100],
        ['loan-1', 1, 50],
      ],
    );
    assert.equal(result.allocated, 2_260);
    assert.equal(result.overpayment, 0);
  });

  it('the exact payoff settles every installment with no overpayment', () => {
    const owed = account();
    const total = sum(owed.map(owedTotal));
    const result = allocate(total, owed);
    assert.equal(result.allocations.length, 4);
    assert.ok(result.allocations.every((a) => a.settles));
    assert.equal(result.allocated, total);
    assert.equal(result.overpayment, 0);
  });

  it('an overpayment settles everything and returns the rest as overpayment', () => {
    const owed = account();
    const total = sum(owed.map(owedTotal));
    const result = allocate(total + 1_234, owed);
    assert.ok(result.allocations.every((a) => a.settles));
    assert.equal(result.allocated, total);
    assert.equal(result.overpayment, 1_234);
    assert.deepEqual(allocate(500, []), { allocations: [], allocated: 0, overpayment: 500 });
  });

  it('a zero amount allocates nothing and overpays nothing', () => {
    assert.deepEqual(allocate(0, account()), { allocations: [], allocated: 0, overpayment: 0 });
  });

  it('installments that owe nothing get no allocation row', () => {
    const result = allocate(100, [
      owing('paid', '2026-12-07', {}, { position: 1 }),
      owing('open', '2026-12-14', { interest: 40, principal: 60 }, { position: 2 }),
    ]);
    assert.deepEqual(rows(result.allocations), [['open', 0, 40, 60, true]]);
  });

  it('components [penalties, interest] (a waiver) never touch principal, and the rest is overpayment', () => {
    const owed = account();
    const forgivable = sum(owed.map((o) => o.penalties + o.interest));
    const result = allocate(forgivable + 77, owed, WAIVER);
    assert.deepEqual(rows(result.allocations), [
      ['c0-1', 10, 100, 0, false],
      ['c0-2', 0, 100, 0, false],
      ['c1-1', 5, 100, 0, false],
      ['c1-2', 0, 100, 0, false],
    ]);
    assert.ok(result.allocations.every((a) => a.principal === 0));
    assert.equal(result.allocated, forgivable);
    assert.equal(result.overpayment, 77);
  });

  it('a waiver passes over an installment that owes only principal, and settles one that owed no principal', () => {
    const result = allocate(
      60,
      [
        owing('principal-only', '2026-12-07', { principal: 500 }, { position: 1 }),
        owing('no-principal', '2026-12-14', { penalties: 10, interest: 40 }, { position: 2 }),
        owing('later', '2026-12-21', { interest: 100, principal: 500 }, { position: 3 }),
      ],
      WAIVER,
    );
    assert.deepEqual(rows(result.allocations), [
      ['no-principal', 10, 40, 0, true],
      ['later', 0, 10, 0, false],
    ]);
  });

  it('leaves its inputs untouched and answers the same for any input order', () => {
    const owed = account();
    const snapshot = structuredClone(owed);
    const result = allocate(2_260, owed);
    assert.deepEqual(owed, snapshot);
    assert.deepEqual(allocate(2_260, [...owed].reverse()), result);
  });

  it('throws RangeError on amounts that are negative, fractional, unsafe or not finite', () => {
    for (const amount of [-1, 0.5, 10.01, Number.MAX_SAFE_INTEGER + 1, Number.POSITIVE_INFINITY, Number.NaN])
      assert.throws(() => allocate(amount, account()), RangeError, `amount ${amount}`);
  });

  it('throws RangeError on an installment owing a negative, fractional, unsafe or non-finite amount', () => {
    for (const bad of [-1, 0.5, Number.MAX_SAFE_INTEGER + 1, Number.POSITIVE_INFINITY, Number.NaN])
      for (const component of ALL)
        assert.throws(
          () => allocate(100, [owing('bad', '2026-12-07', { [component]: bad })]),
          RangeError,
          `${component} ${bad}`,
        );
  });
});

describe('spec 5 allocation: properties (seeded)', () => {
  const RUNS = 500;
  const startDates = ['2026-12-01', '2026-12-04', '2026-12-08', '2026-12-15'];
  const addDays = (date: string, n: number) =>
    new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

  /** 1–8 installments over 1–3 cycles, weekly per cycle (now and then all on one day); cycles may start on colliding dates, amounts may be 0. */
  function obligationSet(random: () => number): Obligation[] {
    const cycles = intBetween(random, 1, 3);
    const count = intBetween(random, Math.max(1, cycles), 8);
    const perCycle = Array.from({ length: cycles }, () => 1);
    for (let extra = count - cycles; extra > 0; extra--) perCycle[intBetween(random, 0, cycles - 1)]! += 1;
    const amount = () => (random() < 0.3 ? 0 : intBetween(random, 1, random() < 0.5 ? 50 : 50_000));
    const obligations: Obligation[] = [];
    perCycle.forEach((n, cycleOrder) => {
      const start = startDates[intBetween(random, 0, startDates.length - 1)]!;
      // Now and then a cycle's installments all fall due on one day, so position decides.
      const step = random() < 0.15 ? 0 : 7;
      for (let position = 1; position <= n; position++)
        obligations.push({
          installmentId: `c${cycleOrder}-${position}`,
          loanId: `loan-${cycleOrder}`,
          position,
          dueDate: addDays(start, step * position),
          cycleOrder,
          penalties: random() < 0.5 ? 0 : amount(),
          interest: amount(),
          principal: amount(),
        });
    });
    // Shuffle: the order must come from the rule, not from the input.
    for (let i = obligations.length - 1; i > 0; i--) {
      const j = intBetween(random, 0, i);
      [obligations[i], obligations[j]] = [obligations[j]!, obligations[i]!];
    }
    return obligations;
  }

  /** The rule's order computed independently of inOrder: due date, cycle order, position. */
  const orderKey = (o: Obligation) =>
    `${o.dueDate}|${String(o.cycleOrder).padStart(4, '0')}|${String(o.position).padStart(4, '0')}`;

  const fields = { penalties: 'arrears', interest: 'interest', principal: 'principal' } as const;

  it(`over ${RUNS} random accounts and payment sequences, every allocation obeys the strategy's invariants`, () => {
    const random = mulberry32(0x5eed_a110);
    let allocationsChecked = 0;
    for (let run = 0; run < RUNS; run++) {
      const initial = obligationSet(random);
      // Mostly a repayment (all components) or a waiver; sometimes any non-empty subset.
      const kind = random();
      const mask = intBetween(random, 1, 7);
      const components = kind < 0.5 ? ALL : kind < 0.75 ? WAIVER : ALL.filter((_, i) => (mask >> i) & 1);
      const ordered = [...initial].sort((a, b) => (orderKey(a) < orderKey(b) ? -1 : 1));
      const rank = new Map(ordered.map((o, i) => [o.installmentId, i]));
      const totalOwed = sum(initial.map(owedTotal));
      // What is still owed, by installment, as the payments go through.
      const owed = new Map(initial.map((o) => [o.installmentId, { ...o }]));
      let totalAllocated = 0;

      const payments = intBetween(random, 1, 6);
      for (let p = 0; p < payments; p++) {
        const remaining = sum([...owed.values()].map(owedTotal));
        const roll = random();
        const amount =
          roll < 0.1 ? 0 : roll < 0.2 ? remaining : intBetween(random, 1, Math.max(1, Math.ceil(remaining * 0.7)));
        const context = `run ${run}, payment ${p} of ${amount} (components ${components.join(',')})`;
        const before = new Map([...owed].map(([id, o]) => [id, { ...o }]));

        const result = allocate(
          amount,
          [...owed.values()].map((o) => ({ ...o })),
          components,
        );

        // Conservation: allocations plus overpayment are exactly the payment.
        assert.equal(result.allocated, sum(result.allocations.map((a) => a.allocated)), context);
        assert.equal(result.allocated + result.overpayment, amount, context);
        assert.ok(result.overpayment >= 0, context);

        const seen = new Set<string>();
        for (const a of result.allocations) {
          const was = before.get(a.installmentId);
          assert.ok(was, `${context}: unknown installment ${a.installmentId}`);
          assert.ok(!seen.has(a.installmentId), `${context}: ${a.installmentId} allocated twice`);
          seen.add(a.installmentId);
          assert.equal(a.loanId, was.loanId, context);
          assert.equal(a.position, was.position, context);
          assert.equal(a.allocated, a.arrears + a.interest + a.principal, context);
          assert.ok(a.allocated > 0, `${context}: empty allocation row for ${a.installmentId}`);
          for (const component of ALL) {
            const paid = a[fields[component]];
            assert.ok(Number.isSafeInteger(paid) && paid >= 0, context);
            assert.ok(
              paid <= was[component],
              `${context}: ${a.installmentId} ${component} ${paid} > ${was[component]}`,
            );
            if (!components.includes(component)) assert.equal(paid, 0, `${context}: ${component} is not allowed`);
          }
          // Within an installment: a component is paid only once every earlier allowed one is cleared
          // (interest after penalties, principal after interest).
          ALL.forEach((component, i) => {
            if (a[fields[component]] === 0) return;
            for (const earlier of ALL.slice(0, i))
              if (components.includes(earlier))
                assert.equal(a[fields[earlier]], was[earlier], `${context}: ${component} before ${earlier}`);
          });

          const now = owed.get(a.installmentId)!;
          now.penalties -= a.arrears;
          now.interest -= a.interest;
          now.principal -= a.principal;
          assert.equal(a.settles, owedTotal(now) === 0, `${context}: settles of ${a.installmentId}`);
        }
        // Allocation rows come in the rule's order.
        const ranks = result.allocations.map((a) => rank.get(a.installmentId)!);
        assert.deepEqual(
          ranks,
          [...ranks].sort((x, y) => x - y),
          context,
        );

        // Order rule: nothing later in order gets money while an earlier one still owes an allowed component.
        const stillOwesAllowed = (o: Obligation) => components.some((c) => o[c] > 0);
        const lastPaid = ranks.length ? Math.max(...ranks) : 0;
        for (const o of ordered.slice(0, lastPaid))
          assert.ok(!stillOwesAllowed(owed.get(o.installmentId)!), `${context}: ${o.installmentId} skipped`);
        // An overpayment only once nothing allowed is owed anywhere.
        if (result.overpayment > 0)
          assert.ok(![...owed.values()].some(stillOwesAllowed), `${context}: overpaid while something is owed`);

        totalAllocated += result.allocated;
        allocationsChecked += result.allocations.length;
        assert.ok(totalAllocated <= totalOwed, context);
        assert.equal(totalAllocated, totalOwed - sum([...owed.values()].map(owedTotal)), context);
      }
    }
    assert.ok(allocationsChecked > RUNS, `only ${allocationsChecked} allocations were checked`);
  });

  it('paying the exact total owed in any split ends with every installment settled and nothing overpaid', () => {
    const random = mulberry32(0xc0ffee);
    for (let run = 0; run < RUNS; run++) {
      let owed = obligationSet(random);
      const total = sum(owed.map(owedTotal));
      let paid = 0;
      while (paid < total) {
        const amount = intBetween(random, 1, total - paid);
        const result = allocate(amount, owed);
        assert.equal(result.overpayment, 0, `run ${run}`);
        const byId = new Map(result.allocations.map((a) => [a.installmentId, a]));
        owed = owed.map((o) => {
          const a = byId.get(o.installmentId);
          return a
            ? {
                ...o,
                penalties: o.penalties - a.arrears,
                interest: o.interest - a.interest,
                principal: o.principal - a.principal,
              }
            : o;
        });
        paid += amount;
      }
      assert.ok(
        owed.every((o) => owedTotal(o) === 0),
        `run ${run}`,
      );
      assert.deepEqual(allocate(1, owed), { allocations: [], allocated: 0, overpayment: 1 }, `run ${run}`);
    }
  });
});

describe('spec 2 penalty terms: penaltyDays', () => {
  const terms = (overrides: Partial<PenaltyTerms> = {}): PenaltyTerms => ({
    rateBasisPoints: 100,
    calculationBasis: 'PRINCIPAL_AND_ARREARS',
    type: 'RECURRING',
    periodDays: 7,
    trigger: 'AFTER_LOAN_END',
    gracePeriodDays: 3,
    maxChargeDays: 90,
    ...overrides,
  });

  it('AFTER_LOAN_END: grace 3, period 7, max 90 charges on 13 days, 3, 10, …, 87', () => {
    const days = penaltyDays(terms());
    assert.equal(days.length, 13);
    assert.deepEqual(
      days,
      Array.from({ length: 13 }, (_, i) => 3 + 7 * i),
    );
  });

  it('charges every period while the offset from the first charge is below max_charge_days', () => {
    assert.deepEqual(penaltyDays(terms({ gracePeriodDays: 0, periodDays: 7, maxChargeDays: 14 })), [0, 7]);
    assert.deepEqual(penaltyDays(terms({ gracePeriodDays: 0, periodDays: 7, maxChargeDays: 15 })), [0, 7, 14]);
    assert.deepEqual(penaltyDays(terms({ gracePeriodDays: 5, periodDays: 30, maxChargeDays: 1 })), [5]);
    assert.deepEqual(penaltyDays(terms({ gracePeriodDays: 2, periodDays: 1, maxChargeDays: 3 })), [2, 3, 4]);
  });

  it('terms this service does not apply (another trigger, type or basis, a zero rate) charge nothing', () => {
    for (const overrides of [
      { trigger: 'AFTER_DUE_DATE' },
      { type: 'ONE_TIME' },
      { calculationBasis: 'PRINCIPAL' },
      { rateBasisPoints: 0 },
      { rateBasisPoints: -100 },
      { periodDays: 0 },
      { gracePeriodDays: -1 },
      { maxChargeDays: 0 },
    ])
      assert.deepEqual(penaltyDays(terms(overrides)), [], JSON.stringify(overrides));
  });
});

describe('spec 2 penalty terms: penaltyAmount', () => {
  it('is basis × rate_basis_points / 10 000 rounded half up: 12 345 at 100 bps is 123, 50 is 1, 49 is 0', () => {
    assert.equal(penaltyAmount(12_345, 100), 123);
    assert.equal(penaltyAmount(50, 100), 1);
    assert.equal(penaltyAmount(49, 100), 0);
  });

  it('rounds ties up, never to even: 150 → 2, 250 → 3 at 100 bps', () => {
    assert.equal(penaltyAmount(150, 100), 2);
    assert.equal(penaltyAmount(250, 100), 3);
    assert.equal(penaltyAmount(12_350, 100), 124);
  });

  it('is zero for a zero basis or rate and exact for large bases', () => {
    assert.equal(penaltyAmount(0, 100), 0);
    assert.equal(penaltyAmount(12_345, 0), 0);
    assert.equal(penaltyAmount(Number.MAX_SAFE_INTEGER, 10_000), Number.MAX_SAFE_INTEGER);
    assert.equal(penaltyAmount(Number.MAX_SAFE_INTEGER, 5_000), 4_503_599_627_370_496);
  });

  it('matches the exact half-up rounding on random small inputs (seeded)', () => {
    const random = mulberry32(42);
    for (let i = 0; i < 1_000; i++) {
      const basis = intBetween(random, 0, 10_000_000);
      const bps = intBetween(random, 0, 20_000);
      // basis × bps < 2^53 here, so the float arithmetic below is exact up to the final division.
      const expected = Math.floor((basis * bps + 5_000) / 10_000);
      assert.equal(penaltyAmount(basis, bps), expected, `${basis} at ${bps} bps`);
    }
  });

  it('throws RangeError on a negative or fractional basis or rate', () => {
    for (const [basis, bps] of [
      [-1, 100],
      [100, -1],
      [0.5, 100],
      [100, 0.5],
      [Number.MAX_SAFE_INTEGER + 1, 100],
    ] as const)
      assert.throws(() => penaltyAmount(basis, bps), RangeError, `${basis} at ${bps} bps`);
  });
});

import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import {
  addDays,
  flatRateInterest,
  flatRateSchedule,
  tenureDays,
  type PeriodUnit,
  type Rate,
  type ScheduleInput,
  type Tenure,
} from '../../domain/loans/schedule';

const weekly = (basisPoints: number): Rate => ({ basisPoints, periodValue: 1, periodUnit: 'WEEKS' });
const weeks = (duration: number): Tenure => ({ duration, unit: 'WEEKS' });
const days = (duration: number): Tenure => ({ duration, unit: 'DAYS' });

const unit = fc.constantFrom<PeriodUnit>('DAYS', 'WEEKS');
const rate = fc.record({
  basisPoints: fc.integer({ min: 0, max: 100_000 }),
  periodValue: fc.integer({ min: 1, max: 30 }),
  periodUnit: unit,
});
const tenure = fc.oneof(
  fc.record({ duration: fc.integer({ min: 1, max: 104 }), unit: fc.constant<PeriodUnit>('WEEKS') }),
  fc.record({ duration: fc.integer({ min: 1, max: 730 }), unit: fc.constant<PeriodUnit>('DAYS') }),
);
// Up to Number.MAX_SAFE_INTEGER / 10^6, the range the module promises exact results for.
const principal = fc.integer({ min: 1, max: Math.floor(Number.MAX_SAFE_INTEGER / 1e6) });
const isoDate = fc
  .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2200-12-31T00:00:00Z'), noInvalidDate: true })
  .map((date) => date.toISOString().slice(0, 10));
const scheduleInput: fc.Arbitrary<ScheduleInput> = fc.record({ principal, rate, tenure, startDate: isoDate });

const installmentCount = (input: ScheduleInput) => (input.tenure.unit === 'WEEKS' ? input.tenure.duration : 1);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const utcDays = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000;

describe('spec 4.3 schedules: flat-rate worked examples', () => {
  it('10,000.00 at 250 bps a week over 4 weeks repays 4 weekly installments of 2,750.00', () => {
    const schedule = flatRateSchedule({
      principal: 1_000_000,
      rate: weekly(250),
      tenure: weeks(4),
      startDate: '2026-11-23',
    });
    assert.deepEqual(schedule, {
      installments: [
        { position: 1, dueDate: '2026-11-30', principal: 250_000, interest: 25_000, total: 275_000 },
        { position: 2, dueDate: '2026-12-07', principal: 250_000, interest: 25_000, total: 275_000 },
        { position: 3, dueDate: '2026-12-14', principal: 250_000, interest: 25_000, total: 275_000 },
        { position: 4, dueDate: '2026-12-21', principal: 250_000, interest: 25_000, total: 275_000 },
      ],
      totalPrincipal: 1_000_000,
      totalInterest: 100_000,
      totalRepayment: 1_100_000,
    });
  });

  it('over 3 weeks the principal remainder falls on the last installment: 333 333, 333 333, 333 334', () => {
    const schedule = flatRateSchedule({
      principal: 1_000_000,
      rate: weekly(250),
      tenure: weeks(3),
      startDate: '2026-11-23',
    });
    assert.deepEqual(
      schedule.installments.map(({ principal, interest, total }) => [principal, interest, total]),
      [
        [333_333, 25_000, 358_333],
        [333_333, 25_000, 358_333],
        [333_334, 25_000, 358_334],
      ],
    );
    assert.equal(schedule.totalInterest, 75_000);
    assert.equal(schedule.totalRepayment, 1_075_000);
  });

  it('30 days at 250 bps a week is a bullet loan: interest round(1 000 000 × 0.025 × 30/7) = 107 143, due at start + 30', () => {
    const schedule = flatRateSchedule({
      principal: 1_000_000,
      rate: weekly(250),
      tenure: days(30),
      startDate: '2026-11-23',
    });
    assert.deepEqual(schedule, {
      installments: [{ position: 1, dueDate: '2026-12-23', principal: 1_000_000, interest: 107_143, total: 1_107_143 }],
      totalPrincipal: 1_000_000,
      totalInterest: 107_143,
      totalRepayment: 1_107_143,
    });
  });

  it('a weekly rate prices a tenure in days pro rata per day, and rounds once, half up', () => {
    assert.equal(flatRateInterest(1_000_000, weekly(250), days(10)), 35_714); // 35 714.28…
    assert.equal(flatRateInterest(1_000_000, weekly(250), days(1)), 3_571); // 3 571.42…
    assert.equal(flatRateInterest(2, { basisPoints: 2_500, periodValue: 1, periodUnit: 'DAYS' }, days(1)), 1); // 0.5
    assert.equal(flatRateInterest(14, weekly(2_500), days(1)), 1); // 0.5
    assert.equal(flatRateInterest(13, weekly(2_500), days(1)), 0); // 0.46…
    assert.equal(flatRateInterest(1_000_000, weekly(0), weeks(4)), 0);
    assert.equal(tenureDays(weeks(4)), 28);
    assert.equal(tenureDays(days(30)), 30);
  });

  it('is exact where floating point is not: large principals neither overflow nor drift', () => {
    const big = Math.floor(Number.MAX_SAFE_INTEGER / 1e6); // 9 007 199 254
    // 9 007 199 254 × 0.0333 × 365 / 7 = 15 639 714 761.82…
    assert.equal(flatRateInterest(big, weekly(333), days(365)), 15_639_714_762);
    assert.equal(flatRateInterest(Number.MAX_SAFE_INTEGER, weekly(1), days(7)), 900_719_925_474); // …474.0991
  });
});

describe('spec 4.3 schedules: properties', () => {
  it('installments sum to principal plus interest, each component separately and in total', () => {
    fc.assert(
      fc.property(scheduleInput, (input) => {
        const schedule = flatRateSchedule(input);
        assert.equal(schedule.installments.length, installmentCount(input));
        assert.equal(schedule.totalPrincipal, input.principal);
        assert.equal(schedule.totalInterest, flatRateInterest(input.principal, input.rate, input.tenure));
        assert.equal(sum(schedule.installments.map((i) => i.principal)), schedule.totalPrincipal);
        assert.equal(sum(schedule.installments.map((i) => i.interest)), schedule.totalInterest);
        assert.equal(sum(schedule.installments.map((i) => i.total)), schedule.totalRepayment);
        assert.equal(schedule.totalRepayment, schedule.totalPrincipal + schedule.totalInterest);
        for (const installment of schedule.installments)
          assert.equal(installment.total, installment.principal + installment.interest);
      }),
    );
  });

  it('no installment amount is negative or fractional', () => {
    fc.assert(
      fc.property(scheduleInput, (input) => {
        for (const { principal, interest, total } of flatRateSchedule(input).installments)
          for (const amount of [principal, interest, total]) assert.ok(Number.isSafeInteger(amount) && amount >= 0);
      }),
    );
  });

  it('due dates strictly increase, all after the start date: weekly for a tenure in weeks, start + duration for one in days', () => {
    fc.assert(
      fc.property(scheduleInput, (input) => {
        const { installments } = flatRateSchedule(input);
        let previous = input.startDate;
        for (const [index, installment] of installments.entries()) {
          assert.equal(installment.position, index + 1);
          assert.match(installment.dueDate, /^\d{4}-\d{2}-\d{2}$/);
          assert.ok(installment.dueDate > previous, `${installment.dueDate} after ${previous}`);
          previous = installment.dueDate;
          const expected = input.tenure.unit === 'WEEKS' ? 7 * (index + 1) : input.tenure.duration;
          assert.equal(utcDays(installment.dueDate) - utcDays(input.startDate), expected);
        }
      }),
    );
  });

  it('the same input always gives the same schedule, and the input is left untouched', () => {
    fc.assert(
      fc.property(scheduleInput, (input) => {
        // fast-check's records may have a null prototype: compare as JSON, which a copy keeps.
        const before = JSON.stringify(input);
        assert.deepEqual(flatRateSchedule(input), flatRateSchedule(JSON.parse(before) as ScheduleInput));
        assert.equal(JSON.stringify(input), before);
      }),
    );
  });

  it('the last installment carries the remainder: every earlier one is floor(amount / n)', () => {
    fc.assert(
      fc.property(scheduleInput, (input) => {
        const { installments, totalInterest } = flatRateSchedule(input);
        const n = installments.length;
        for (const installment of installments.slice(0, -1)) {
          assert.equal(installment.principal, Math.floor(input.principal / n));
          assert.equal(installment.interest, Math.floor(totalInterest / n));
        }
        const last = installments[n - 1]!;
        assert.equal(last.principal, input.principal - (n - 1) * Math.floor(input.principal / n));
        assert.ok(last.principal - Math.floor(input.principal / n) < n, 'the remainder is less than n');
        assert.ok(last.interest - Math.floor(totalInterest / n) < n, 'the remainder is less than n');
      }),
    );
  });

  it('the interest depends on the tenure and rate period in days only: k WEEKS and 7k DAYS cost the same', () => {
    assert.equal(
      flatRateSchedule({ principal: 1_000_000, rate: weekly(250), tenure: weeks(2), startDate: '2026-11-23' })
        .totalInterest,
      flatRateSchedule({ principal: 1_000_000, rate: weekly(250), tenure: days(14), startDate: '2026-11-23' })
        .totalInterest,
    );
    fc.assert(
      fc.property(principal, rate, fc.integer({ min: 1, max: 104 }), (amount, r, k) => {
        const interest = flatRateInterest(amount, r, weeks(k));
        assert.equal(flatRateInterest(amount, r, days(7 * k)), interest);
        if (r.periodUnit === 'WEEKS')
          assert.equal(
            flatRateInterest(amount, { ...r, periodValue: 7 * r.periodValue, periodUnit: 'DAYS' }, weeks(k)),
            interest,
          );
      }),
    );
  });

  it('the interest is the exact flat-rate amount rounded half up (within half a minor unit, ties up)', () => {
    fc.assert(
      fc.property(principal, rate, tenure, (amount, r, t) => {
        const interest = BigInt(flatRateInterest(amount, r, t));
        // exact = numerator / denominator; half up means exact - 1/2 < interest <= exact + 1/2, ties up.
        const numerator = BigInt(amount) * BigInt(r.basisPoints) * BigInt(tenureDays(t));
        const denominator = 10_000n * BigInt(r.periodValue * (r.periodUnit === 'WEEKS' ? 7 : 1));
        assert.ok(2n * interest * denominator <= 2n * numerator + denominator);
        assert.ok(2n * numerator + denominator < 2n * interest * denominator + 2n * denominator);
      }),
    );
  });

  it('addDays is calendar arithmetic in UTC, across month ends and leap years', () => {
    assert.equal(addDays('2024-02-28', 1), '2024-02-29');
    assert.equal(addDays('2023-02-28', 1), '2023-03-01');
    assert.equal(addDays('2100-02-28', 1), '2100-03-01');
    assert.equal(addDays('2000-02-28', 1), '2000-02-29');
    assert.equal(addDays('2026-12-31', 1), '2027-01-01');
    assert.equal(addDays('2026-03-01', -1), '2026-02-28');
    assert.equal(addDays('2026-11-23', 0), '2026-11-23');
    fc.assert(
      fc.property(isoDate, fc.integer({ min: -100_000, max: 100_000 }), (date, offset) => {
        const expected = new Date(Date.parse(`${date}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
        assert.equal(addDays(date, offset), expected);
      }),
    );
  });

  it('invalid inputs throw RangeError', () => {
    const valid: ScheduleInput = { principal: 1_000_000, rate: weekly(250), tenure: weeks(4), startDate: '2026-11-23' };
    const invalid: [string, ScheduleInput][] = [
      ...[0, -1, 1.5, NaN, Infinity, Number.MAX_SAFE_INTEGER + 1].map((p): [string, ScheduleInput] => [
        `principal ${p}`,
        { ...valid, principal: p },
      ]),
      ...[0, -4, 2.5, NaN].map((d): [string, ScheduleInput] => [`duration ${d}`, { ...valid, tenure: weeks(d) }]),
      ...[0, -1, 0.5].map((v): [string, ScheduleInput] => [
        `period ${v}`,
        { ...valid, rate: { ...weekly(250), periodValue: v } },
      ]),
      ...[-1, 2.5, NaN].map((b): [string, ScheduleInput] => [`basis points ${b}`, { ...valid, rate: weekly(b) }]),
      ['tenure unit', { ...valid, tenure: { duration: 4, unit: 'MONTHS' as PeriodUnit } }],
      ['rate unit', { ...valid, rate: { ...weekly(250), periodUnit: 'YEARS' as PeriodUnit } }],
      ['a tenure in weeks too long to be safe', { ...valid, tenure: weeks(Number.MAX_SAFE_INTEGER) }],
      ['interest beyond a safe integer', { ...valid, principal: Number.MAX_SAFE_INTEGER, rate: weekly(10_000) }],
      ['a due date past 9999', { ...valid, startDate: '9999-12-01', tenure: weeks(5) }],
      ...[
        '2026-02-30',
        '2025-02-29',
        '2026-13-01',
        '2026-00-10',
        '2026-1-01',
        '26-11-23',
        '2026-11-23T00:00:00Z',
        '',
      ].map((d): [string, ScheduleInput] => [`start date ${JSON.stringify(d)}`, { ...valid, startDate: d }]),
    ];
    for (const [label, input] of invalid) assert.throws(() => flatRateSchedule(input), RangeError, label);
    assert.throws(() => addDays('2026-11-23', 1.5), RangeError);
    assert.throws(() => addDays('2026-02-29', 1), RangeError);
    assert.throws(() => tenureDays(days(0)), RangeError);
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ max: 0 }), fc.double({ noInteger: true }), fc.constant(Number.MAX_SAFE_INTEGER + 2)),
        (p) => {
          assert.throws(() => flatRateSchedule({ ...valid, principal: p }), RangeError);
        },
      ),
    );
  });
});

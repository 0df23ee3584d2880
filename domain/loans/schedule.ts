/**
 * Flat-rate repayment schedules (pure and deterministic: workflows and the API both import it).
 * Money is integer minor units (KES cents); dates are `YYYY-MM-DD` calendar days, UTC.
 *
 * - Interest is flat: charged on the original principal for the whole tenure,
 *   `principal × basisPoints / 10 000 × tenure days / rate period days`, a week being 7 days, so a
 *   weekly rate prices a tenure in days pro rata per day (250 bps a week over 10 days is
 *   250 × 10/7 bps). It is computed exactly and rounded once, half up, to a whole minor unit.
 * - A tenure in WEEKS repays one installment a week, due on the start (disbursement) date plus
 *   7·k days, k = 1..n; a tenure in DAYS is a bullet loan: one installment due on the start date
 *   plus its days.
 * - Principal and interest are each split evenly across the installments in whole minor units,
 *   the remainder on the last installment; an installment's total is its principal plus its
 *   interest, and the schedule's totals are the sums.
 * - Inputs are refused with a RangeError: a principal, duration or period value that is not a
 *   positive safe integer, basis points that are not a non-negative safe integer, an unknown
 *   period unit, a date that is not a real calendar day, or amounts or dates out of range.
 */
import type { PeriodUnit } from './terms';

export type { PeriodUnit };

/** An interest rate: `basisPoints` per `periodValue` `periodUnit`s, e.g. 250 bps per 1 WEEKS. */
export interface Rate {
  basisPoints: number;
  periodValue: number;
  periodUnit: PeriodUnit;
}

/** A loan's length, e.g. 4 WEEKS or 30 DAYS. */
export interface Tenure {
  duration: number;
  unit: PeriodUnit;
}

export interface ScheduleInput {
  principal: number;
  rate: Rate;
  tenure: Tenure;
  /** The disbursement date, `YYYY-MM-DD`. */
  startDate: string;
}

export interface ScheduledInstallment {
  /** 1-based. */
  position: number;
  /** `YYYY-MM-DD`. */
  dueDate: string;
  principal: number;
  interest: number;
  total: number;
}

export interface Schedule {
  installments: ScheduledInstallment[];
  totalPrincipal: number;
  totalInterest: number;
  totalRepayment: number;
}

const DAYS_PER_UNIT: Record<PeriodUnit, number> = { DAYS: 1, WEEKS: 7 };

function positiveSafeInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive safe integer`);
  return value;
}

function daysOf(value: number, unit: PeriodUnit, name: string): number {
  positiveSafeInteger(value, name);
  if (unit !== 'DAYS' && unit !== 'WEEKS') throw new RangeError(`${name}'s unit must be DAYS or WEEKS`);
  const days = value * DAYS_PER_UNIT[unit];
  if (!Number.isSafeInteger(days)) throw new RangeError(`${name} is too long`);
  return days;
}

/** The length of a tenure in days, a week being 7. */
export function tenureDays(tenure: Tenure): number {
  return daysOf(tenure.duration, tenure.unit, 'tenure duration');
}

/**
 * The flat-rate interest on `principal` over `tenure`: principal × bps / 10 000 × tenure days /
 * rate period days, in exact integer arithmetic, rounded once, half up, to a whole minor unit.
 */
export function flatRateInterest(principal: number, rate: Rate, tenure: Tenure): number {
  positiveSafeInteger(principal, 'principal');
  if (!Number.isSafeInteger(rate.basisPoints) || rate.basisPoints < 0)
    throw new RangeError('basis points must be a non-negative safe integer');
  const periodDays = daysOf(rate.periodValue, rate.periodUnit, 'rate period');
  const numerator = BigInt(principal) * BigInt(rate.basisPoints) * BigInt(tenureDays(tenure));
  const denominator = 10_000n * BigInt(periodDays);
  // Half up on non-negative values: floor((2n + d) / 2d).
  const interest = (2n * numerator + denominator) / (2n * denominator);
  if (interest > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('interest exceeds a safe integer');
  return Number(interest);
}

/** Splits `amount` into `count` whole parts: floor(amount / count) each, the remainder on the last. */
function split(amount: number, count: number): (position: number) => number {
  const part = Math.floor(amount / count);
  const last = amount - part * (count - 1);
  return (position) => (position === count ? last : part);
}

/** The flat-rate schedule of a loan disbursed on `startDate` (see the module's rules). */
export function flatRateSchedule(input: ScheduleInput): Schedule {
  const { principal, rate, tenure, startDate } = input;
  const totalInterest = flatRateInterest(principal, rate, tenure);
  const totalRepayment = principal + totalInterest;
  if (!Number.isSafeInteger(totalRepayment)) throw new RangeError('total repayment exceeds a safe integer');
  const count = tenure.unit === 'WEEKS' ? tenure.duration : 1;
  const spacing = tenure.unit === 'WEEKS' ? 7 : tenure.duration;
  const start = dayNumber(startDate);
  // The last due date first: an out-of-range tenure is refused before any installment is built.
  dateOf(start + spacing * count);
  const principalPart = split(principal, count);
  const interestPart = split(totalInterest, count);
  const installments: ScheduledInstallment[] = [];
  for (let position = 1; position <= count; position++) {
    const principalDue = principalPart(position);
    const interestDue = interestPart(position);
    installments.push({
      position,
      dueDate: dateOf(start + spacing * position),
      principal: principalDue,
      interest: interestDue,
      total: principalDue + interestDue,
    });
  }
  return { installments, totalPrincipal: principal, totalInterest, totalRepayment };
}

/** `date` (`YYYY-MM-DD`) plus `days` (an integer, possibly negative) calendar days, UTC. */
export function addDays(date: string, days: number): string {
  if (!Number.isSafeInteger(days)) throw new RangeError('days must be a safe integer');
  return dateOf(dayNumber(date) + days);
}

// Calendar arithmetic on the proleptic Gregorian calendar in plain integers (H. Hinnant's
// days-from-civil), so no Date object or time zone is involved. Day 0 is 1970-01-01.

const MIN_DAY = daysFromCivil(0, 1, 1);
const MAX_DAY = daysFromCivil(9999, 12, 31);

const isLeap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const monthLength = (year: number, month: number) =>
  month === 2 ? (isLeap(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

function dayNumber(date: string): number {
  const match = typeof date === 'string' ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(date) : null;
  if (!match) throw new RangeError(`${String(date)} is not a YYYY-MM-DD date`);
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1 || day > monthLength(year, month))
    throw new RangeError(`${date} is not a calendar date`);
  return daysFromCivil(year, month, day);
}

function dateOf(dayNo: number): string {
  if (!Number.isSafeInteger(dayNo) || dayNo < MIN_DAY || dayNo > MAX_DAY)
    throw new RangeError('the date is outside the years 0000 to 9999');
  const [year, month, day] = civilFromDays(dayNo);
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

function civilFromDays(dayNo: number): [number, number, number] {
  const z = dayNo + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [month <= 2 ? era * 400 + yearOfEra + 1 : era * 400 + yearOfEra, month, day];
}

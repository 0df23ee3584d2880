import { strict as assert } from 'node:assert';
import { type LoanSteps, loanAnchorMs, nextStepAtMs, runBehind } from '../../domain/loans/steps';

const DAY = 1_000;
/** Grace 1 day, a charge every 2 days for 5 days: charges on days 1, 3 and 5 after the last due day. */
const penalty: LoanSteps['penalty'] = {
  rateBasisPoints: 100,
  calculationBasis: 'PRINCIPAL_AND_ARREARS',
  type: 'RECURRING',
  periodDays: 2,
  trigger: 'AFTER_LOAN_END',
  gracePeriodDays: 1,
  maxChargeDays: 5,
};
const loan = (
  statuses: LoanSteps['installments'][number]['scheduleStatus'][],
  charged = 0,
  loanId = 'loan',
): LoanSteps => ({
  loanId,
  clock: { anchorMs: 10_000, dayMs: DAY },
  installments: statuses.map((scheduleStatus, i) => ({ dueDay: 7 * (i + 1), scheduleStatus })),
  penalty,
  charged,
});

describe("a loan's steps in time, as Postgres shows them (a repayment is applied at once only when no run is behind its posting)", () => {
  it('the anchor is the disbursement instant rounded down to a whole day', () => {
    assert.equal(loanAnchorMs(12_345, DAY), 12_000);
    assert.equal(loanAnchorMs(86_400_000 * 3 + 5, 86_400_000), 86_400_000 * 3);
  });

  it('the next step: an installment not yet DUE on its due day, not yet OVERDUE the day after, then each penalty period in turn', () => {
    assert.equal(nextStepAtMs(loan(['UPCOMING', 'UPCOMING'])), 10_000 + 7 * DAY);
    assert.equal(nextStepAtMs(loan(['DUE', 'UPCOMING'])), 10_000 + 8 * DAY);
    assert.equal(nextStepAtMs(loan(['OVERDUE', 'UPCOMING'])), 10_000 + 14 * DAY);
    assert.equal(nextStepAtMs(loan(['OVERDUE', 'OVERDUE'])), 10_000 + 15 * DAY);
    assert.equal(nextStepAtMs(loan(['OVERDUE', 'OVERDUE'], 1)), 10_000 + 17 * DAY);
    assert.equal(nextStepAtMs(loan(['OVERDUE', 'OVERDUE'], 2)), 10_000 + 19 * DAY);
    assert.equal(nextStepAtMs(loan(['OVERDUE', 'OVERDUE'], 3)), undefined);
    assert.equal(nextStepAtMs({ ...loan(['OVERDUE']), penalty: undefined }), undefined);
  });

  it('a run is behind an instant when its next step falls due by then; of several, the earliest; an unknown clock first of all', () => {
    const due = 10_000 + 7 * DAY;
    assert.equal(runBehind([loan(['UPCOMING'])], due - 1), undefined);
    assert.equal(runBehind([loan(['UPCOMING'])], due), 'loan', 'a step due at that very instant comes first');
    assert.equal(runBehind([loan(['DUE'])], due), undefined);
    assert.equal(runBehind([loan(['DUE'], 0, 'a'), loan(['UPCOMING'], 0, 'b')], due), 'b');
    assert.equal(runBehind([loan(['DUE'], 0, 'a'), loan(['UPCOMING'], 0, 'b')], due + DAY), 'b', 'due first');
    assert.equal(runBehind([loan(['UPCOMING'], 0, 'a'), { ...loan(['OVERDUE'], 3, 'b'), clock: null }], due), 'b');
    assert.equal(runBehind([{ ...loan(['OVERDUE'], 3), clock: null }], 0), 'loan');
    assert.equal(runBehind([loan(['OVERDUE'], 3)], Number.MAX_SAFE_INTEGER), undefined);
    assert.equal(runBehind([], due), undefined, 'no open loan: nothing to wait for');
  });
});

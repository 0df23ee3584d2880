import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { LoanActivities } from '../../activities';
import { type PenaltyTerms, penaltyDays } from '../../domain/loans/allocation';
import { workflowIds } from '../ids';
import { oneAtATime } from '../one-at-a-time';
import {
  type LoanInput,
  LoanServicingError,
  loanStateQuery,
  paymentAppliedSignal,
  repaymentSignal,
  reverseRepaymentUpdate,
  waiveUpdate,
} from './messages';

const activities = proxyActivities<LoanActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
/** Servicing steps are short database transactions a payer or an operator waits on: local activities. */
const servicing = proxyLocalActivities<LoanActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Changes made while runs may be in flight; each branch keeps older histories replaying. */
const PATCHES = {
  /** Runs started before penalties read their terms when every installment has fallen due. */
  penalties: 'loan-penalties',
  /** A run that wakes late takes its due steps and the repayments queued meanwhile in time order. */
  lateInTimeOrder: 'loan-late-in-time-order',
  /** The OVERDUE step runs for paid installments too (schedule_status follows the dates). */
  overdueStepAlways: 'loan-overdue-step-always',
  /**
   * Servicing steps (local activities) one at a time: concurrent waivers and reversals left
   * histories that did not replay (see ../one-at-a-time.ts). Before it, see `behindWake`.
   */
  oneStepAtATime: 'loan-servicing-one-at-a-time',
  /** A repayment that wakes the run keeps its step's timer: no cancel and restart for each one. */
  keepsStepTimer: 'loan-keeps-step-timer',
} as const;

/**
 * A loan's life (`loan/<loan id>`): it wakes on each installment's due date and marks it DUE,
 * wakes the day after and marks it OVERDUE if anything is still outstanding, then charges the
 * product's penalties (AFTER_LOAN_END plus the grace days, every period, up to the maximum
 * days), and closes the loan (REPAID, collateral released) once everything is paid. Days are
 * `dayMs` long from `anchorMs` (a calendar day in production). A timer that fires late (the
 * worker was down) charges the periods it missed one by one, each on what was owed at its own
 * instant. Repayments are allocated by their stk-push runs while this run is on time; one posted
 * while it is behind its clock is handed here (the repayment signal) and allocated after the steps
 * due before it, one at a time. Operators' reversals and waivers are Updates. Over a long life it
 * continues as new when Temporal suggests, carrying where it stands.
 */
export async function loan(input: LoanInput): Promise<string> {
  const ref = { organizationId: input.organizationId, loanId: input.loanId };
  let closed = false;
  let payments = 0;
  /** The payment count the last repaid check started from: a payment during a check is not lost. */
  let checked = 0;
  /**
   * Repayments signalled and not yet allocated, in posting order (a late run takes them in time
   * order with its steps). Allocation is idempotent: a duplicate costs a read.
   */
  const repayments: { transactionId: string; atMs: number }[] = [];
  let index = input.next?.index ?? 0;
  let step: 'DUE' | 'OVERDUE' = input.next?.step ?? 'DUE';
  let penalty = input.next?.penalty ?? 0;
  /** The main loop is blocked until `wake` (or its step's time): see `behindWake`. */
  let waiting = false;
  const queued = oneAtATime(servicing);
  /** The servicing steps: one at a time (patched), else as each caller asked. */
  const steps = () => (patched(PATCHES.oneStepAtATime) ? queued : servicing);
  setHandler(paymentAppliedSignal, () => {
    payments += 1;
  });
  setHandler(repaymentSignal, ({ transactionId, postedAtMs }) => {
    if (typeof transactionId !== 'string' || repayments.some((r) => r.transactionId === transactionId)) return;
    const atMs = typeof postedAtMs === 'number' ? postedAtMs : Date.now();
    const later = repayments.findIndex((r) => r.atMs > atMs);
    repayments.splice(later < 0 ? repayments.length : later, 0, { transactionId, atMs });
  });
  setHandler(loanStateQuery, () => {
    const installment = input.installments[index];
    return { closed, next: installment && { position: installment.position, step }, penalty };
  });
  const refuseWhenClosed = () => {
    if (closed) throw ApplicationFailure.nonRetryable('The loan is closed', LoanServicingError.LOAN_CLOSED);
  };
  setHandler(
    reverseRepaymentUpdate,
    async (request) => {
      const run = steps();
      const done = await run.reverseRepayment({ ...ref, ...request });
      if (run === servicing && behindWake()) await condition(() => !waiting);
      if (done.outcome === 'refused') throw ApplicationFailure.nonRetryable(done.detail, done.reason);
      return { eventId: done.eventId };
    },
    {
      validator: (request) => {
        refuseWhenClosed();
        if (typeof request.repaymentId !== 'string' || typeof request.reversalId !== 'string')
          throw ApplicationFailure.nonRetryable('The repayment and the reversal need ids', LoanServicingError.INVALID);
      },
    },
  );
  setHandler(
    waiveUpdate,
    async (request) => {
      const run = steps();
      const done = await run.waive({ ...ref, ...request });
      if (run === servicing && behindWake()) await condition(() => !waiting);
      if (done.outcome === 'refused') throw ApplicationFailure.nonRetryable(done.detail, done.reason);
      payments += 1; // a waiver may settle the loan
      return { eventId: done.eventId };
    },
    {
      validator: (request) => {
        refuseWhenClosed();
        if (!Number.isSafeInteger(request.amount) || request.amount <= 0)
          throw ApplicationFailure.nonRetryable('The amount must be a positive integer', LoanServicingError.INVALID);
      },
    },
  );

  const wake = () => payments !== checked || repayments.length > 0;
  const stepDue = stepTimers();
  /** Blocks the main loop until a payment or a repayment wakes it, or the step at `at` is due: true when woken. */
  const waitForWake = async (at?: number) => {
    waiting = true;
    let woke: boolean;
    if (at !== undefined && patched(PATCHES.keepsStepTimer)) {
      const due = stepDue(at);
      await condition(() => wake() || due());
      woke = wake(); // woken as the step fell due: the wake first, then the step (late)
    } else woke = await condition(wake, at === undefined ? undefined : Math.max(0, at - Date.now()));
    waiting = false;
    return woke;
  };
  /**
   * Runs from before `oneStepAtATime` let several servicing steps run at once. Live, the first
   * result to arrive woke the main loop (which cancelled its timer and scheduled its next step)
   * before the others reached their handlers; replay hands the run every result of the task at
   * once. A handler whose result arrives while the main loop is blocked and already bound to wake
   * therefore waits for the main loop to move, as it did live. (Checked in the same synchronous
   * step as the handler's result: an await here would let the other handlers run first.)
   */
  const behindWake = () => waiting && wake();
  const checkClosed = async () => {
    checked = payments;
    closed = await activities.closeLoanIfRepaid(ref);
  };
  /**
   * Allocates the queued repayments (those posted before `beforeMs`); a loan one of them left
   * owing nothing is closed (another cycle's run is told to close it). The loan is checked too
   * when a step elsewhere may have settled it (paymentApplied, a waiver).
   */
  const service = async (beforeMs = Number.POSITIVE_INFINITY) => {
    let repaidHere = false;
    while (repayments.length > 0 && repayments[0]!.atMs < beforeMs) {
      const applied = await steps().applyRepayment({ ...ref, transactionId: repayments[0]!.transactionId });
      repayments.shift();
      if (applied.outcome !== 'applied') continue;
      for (const repaid of applied.repaid)
        if (repaid === input.loanId) repaidHere = true;
        else await notify(repaid);
    }
    if (repaidHere || payments !== checked) await checkClosed();
  };
  /**
   * A long life continues as new, carrying where it stands. Nothing pending is carried: what came
   * in (a repayment during an operator's Update, a waiver's settling) is handled first, until the
   * run is idle.
   */
  const continueAsNewIfSuggested = async () => {
    if (closed || !workflowInfo().continueAsNewSuggested) return;
    do {
      while (!closed && wake()) await service();
      await condition(allHandlersFinished);
    } while (!closed && wake());
    if (!closed) await continueAsNew<typeof loan>({ ...input, next: { index, step, penalty } });
  };

  while (!closed && index < input.installments.length) {
    const installment = input.installments[index]!;
    const at = input.anchorMs + (installment.dueDay + (step === 'OVERDUE' ? 1 : 0)) * input.dayMs;
    // Late (the worker was down): a step due before the queued repayments is taken first.
    const late = at <= Date.now() && patched(PATCHES.lateInTimeOrder);
    // A payment wakes the run early to see whether the loan is repaid.
    if (late ? repayments.some((r) => r.atMs < at) : await waitForWake(at)) {
      await service(late ? at : undefined);
      await continueAsNewIfSuggested();
      continue;
    }
    const status = await activities.advanceInstallment({ ...ref, position: installment.position, to: step });
    // Paid by its due date, an installment still passes its overdue day: a reversal later puts it
    // back where its dates say (runs started before step through only unpaid installments).
    if (step === 'DUE' && (status !== 'PAID' || patched(PATCHES.overdueStepAlways))) step = 'OVERDUE';
    else {
      index += 1;
      step = 'DUE';
    }
    await checkClosed();
    await continueAsNewIfSuggested();
  }

  // Every installment has fallen due: penalties, each at its instant (late ones one by one).
  const terms = closed ? undefined : await penaltyTerms();
  const days = terms ? penaltyDays(terms) : [];
  const lastDueDay = input.installments.at(-1)?.dueDay ?? 0;
  while (!closed && penalty < days.length) {
    const at = input.anchorMs + (lastDueDay + days[penalty]!) * input.dayMs;
    // Late (the worker was down): what happened meanwhile is replayed in time order, so each
    // charge is on what was owed at its instant and each repayment pays the charges before it.
    const late = at <= Date.now();
    if (late ? repayments.some((r) => r.atMs < at) : await waitForWake(at)) {
      await service(late ? at : undefined);
      await continueAsNewIfSuggested();
      continue;
    }
    await activities.chargePenalty({ ...ref, chargeId: uuid4(), period: penalty, dueAtMs: at });
    penalty += 1;
    await continueAsNewIfSuggested();
  }

  // The run waits for the payments that repay the loan.
  while (!closed) {
    await waitForWake();
    await service();
    await continueAsNewIfSuggested();
  }
  // Repayments signalled as the loan closed still land (on the account's other cycles, or as overpayment).
  await condition(allHandlersFinished);
  while (repayments.length > 0) await service();
  return 'REPAID';

  async function penaltyTerms(): Promise<PenaltyTerms | undefined> {
    if (input.penalty) return input.penalty;
    return patched(PATCHES.penalties) ? activities.loanPenaltyTerms(ref) : undefined;
  }
}

/**
 * The timer of the step a run waits for, kept while repayments wake the run (one timer a step, not
 * a cancel and a restart for each wake): `stepDue(at)` starts it for a new `at`, and answers
 * whether the step at `at` is due.
 */
function stepTimers(): (at: number) => () => boolean {
  let current: { at: number; fired: boolean } | undefined;
  return (at) => {
    if (current?.at !== at) {
      const timer = { at, fired: false };
      current = timer;
      // A cancelled run cancels the timer too: the run's condition carries the cancellation.
      void sleep(Math.max(0, at - Date.now())).then(
        () => {
          timer.fired = true;
        },
        (error: unknown) => {
          if (!isCancellation(error)) throw error;
        },
      );
    }
    const timer = current;
    return () => timer.fired;
  };
}

/** Tells another cycle's run that a servicing step touched it; a run already closed needs nothing. */
async function notify(loanId: string): Promise<void> {
  try {
    await getExternalWorkflowHandle(workflowIds.loan(loanId)).signal(paymentAppliedSignal);
  } catch {
    // Closed (repaid) since: nothing to tell.
  }
}

import type { StkCallbackTrigger, StkResult } from './messages';

/** The ids the provider answered a push with. */
export interface PushIds {
  checkoutRequestId: string;
  merchantRequestId?: string;
}

/** A push the run should ask the status query about, and the receipt to keep if it was paid. */
export interface Ask {
  checkoutRequestId: string;
  receipt?: string;
}

/** Callbacks kept while the push's answer is awaited, and ids a push whose answer was lost asks about. */
const MAX_EARLY = 10;
const MAX_CANDIDATES = 5;

/**
 * What callbacks tell a push run (runs under `stk-push-callbacks-are-triggers`). Deterministic,
 * no I/O: the workflow feeds it signals, the push's answer and status-query answers, and asks it
 * what to query.
 *
 * - Before the push's answer, callbacks are kept (a bounded few) and judged once it comes: a
 *   forged early one cannot crowd out the genuine one.
 * - With the push's ids known, a result settles the push only when both ids are the push's; a
 *   trigger for the push makes the run ask about its own push now.
 * - When the push's answer was lost, no callback settles it: a callback that proved the payment
 *   (amount, phone, receipt: the route sends a receipt only then) names a candidate push to ask
 *   about, a few at a time, each distinct; the first candidate the provider reports paid settles
 *   the push (the settle step records its id, unique, so no payment settles two pushes); one it
 *   reports refused or does not know is dropped. A refusal proves nothing about a push whose ids
 *   are unknown. (The callback route bounds how many callbacks reach a run at all.)
 */
export class PushCallbackTriage {
  /** What settles the push: a matched callback result, or a final status-query answer. */
  result: StkResult | undefined;
  private answered = false;
  private ids: PushIds | undefined;
  private readonly early: ({ result: StkResult } | { trigger: StkCallbackTrigger })[] = [];
  /** Ids known, a callback asked for the query: the receipt it brought, if it proved the payment. */
  private askOwn: { receipt?: string } | undefined;
  /** Ids unknown: candidate pushes with their receipts, and which of them are not asked yet. */
  private readonly candidates = new Map<string, string>();
  private readonly unasked = new Set<string>();

  onResult(incoming: StkResult): void {
    if (this.result) return;
    if (!this.answered) this.keepEarly({ result: incoming });
    else if (!this.ids) this.candidate(incoming.checkoutRequestId, incoming.receipt);
    else if (
      this.isOurs(incoming) &&
      (!incoming.merchantRequestId ||
        !this.ids.merchantRequestId ||
        incoming.merchantRequestId === this.ids.merchantRequestId)
    ) {
      this.result = incoming;
    }
  }

  onTrigger(incoming: StkCallbackTrigger): void {
    if (this.result) return;
    if (!this.answered) this.keepEarly({ trigger: incoming });
    else if (!this.ids) this.candidate(incoming.checkoutRequestId, incoming.receipt);
    else if (this.isOurs(incoming)) this.askOwn = { receipt: incoming.receipt ?? this.askOwn?.receipt };
  }

  /** The push request's answer: its ids, or none when it was lost. Callbacks kept meanwhile are judged now. */
  onAnswer(ids: PushIds | undefined): void {
    this.answered = true;
    this.ids = ids;
    for (const kept of this.early.splice(0)) {
      if ('result' in kept) this.onResult(kept.result);
      else this.onTrigger(kept.trigger);
    }
  }

  /** Whether a callback asks for a query before the next scheduled one. */
  get urgent(): boolean {
    return this.askOwn !== undefined || this.unasked.size > 0;
  }

  /** The pushes to ask about now: on the schedule, the own push or every candidate; else only what callbacks asked for. */
  toAsk(scheduled: boolean): Ask[] {
    if (this.ids) {
      const wanted = scheduled || this.askOwn !== undefined;
      const ask = { checkoutRequestId: this.ids.checkoutRequestId, receipt: this.askOwn?.receipt };
      this.askOwn = undefined;
      return wanted ? [ask] : [];
    }
    const ids = scheduled ? [...this.candidates.keys()] : [...this.unasked];
    this.unasked.clear();
    return ids.map((checkoutRequestId) => ({ checkoutRequestId, receipt: this.candidates.get(checkoutRequestId) }));
  }

  /**
   * A status-query answer about one asked push: "being processed" changes nothing; a candidate
   * the provider does not know, or reports refused, is dropped.
   */
  onQueryAnswer(
    ask: Ask,
    answer: { state: 'pending' } | { state: 'unknown' } | { state: 'final'; resultCode: string; resultDesc: string },
  ): void {
    if (this.result || answer.state === 'pending') return;
    const own = this.ids?.checkoutRequestId === ask.checkoutRequestId;
    if (answer.state === 'unknown') {
      if (!own) this.candidates.delete(ask.checkoutRequestId);
      return;
    }
    const paid = answer.resultCode === '0';
    if (own || paid) {
      this.result = {
        source: 'query',
        checkoutRequestId: ask.checkoutRequestId,
        resultCode: answer.resultCode,
        resultDesc: answer.resultDesc,
        receipt: paid ? ask.receipt : undefined,
      };
    } else {
      this.candidates.delete(ask.checkoutRequestId);
    }
  }

  private isOurs(incoming: { checkoutRequestId: string }): boolean {
    return incoming.checkoutRequestId === this.ids?.checkoutRequestId;
  }

  private keepEarly(kept: { result: StkResult } | { trigger: StkCallbackTrigger }): void {
    if (this.early.length < MAX_EARLY) this.early.push(kept);
  }

  private candidate(checkoutRequestId: string, receipt: string | undefined): void {
    if (!receipt || this.candidates.has(checkoutRequestId) || this.candidates.size >= MAX_CANDIDATES) return;
    this.candidates.set(checkoutRequestId, receipt);
    this.unasked.add(checkoutRequestId);
  }
}

import type { Knex } from 'knex';
import type { SentCallback, SimulatedPayment, SimulatedPush } from '../../simulators/mobile-money/model';

/**
 * The mobile-money provider's side (what its simulator received and decided) against ours, for
 * the chaos suites. A payout is known at the provider by its ResultURL and a push by its
 * CallBackURL: both carry our transaction id, whatever OriginatorConversationID or request a
 * retry might have used, so a second request for one transaction shows whatever it was sent as.
 */
export interface ProviderReconciliation {
  /** Transactions the provider received more than one payout request for. */
  payoutsSentTwice: number;
  /** Transactions the provider received more than one push request for. */
  pushesSentTwice: number;
  /**
   * Final transactions where the provider and our ledger disagree: it paid and we did not post,
   * or we posted what it did not pay (or never received). One line each, for the diagnosis.
   */
  disagreements: string[];
  /** Callbacks the simulator could not deliver (no answer in its 5 s, or a 5xx): each left to a run's fallback. */
  undeliveredCallbacks: number;
}

const PAYOUT_URL = /\/callbacks\/b2c\/([0-9a-f-]{36})\//;
const PUSH_URL = /\/callbacks\/stk\/([0-9a-f-]{36})(?:\/|$)/;

export async function reconcileWithProvider(db: Knex, simulatorUrl: string): Promise<ProviderReconciliation> {
  const read = async <T>(path: string) => (await (await fetch(`${simulatorUrl}/_control${path}`)).json()) as T;
  const payments = await read<SimulatedPayment[]>('/b2c');
  const pushes = await read<SimulatedPush[]>('/pushes');
  const callbacks = await read<SentCallback[]>('/callbacks');
  const ours = (await db('transactions').select(
    'id',
    'type',
    'status',
    db.raw(
      `(select string_agg(c.disposition, ', ' order by c.id) from mobile_money_callbacks c
           where c.transaction_ref = transactions.id::text) as recorded`,
    ),
  )) as { id: string; type: 'STK_PUSH' | 'SEND_MONEY'; status: string; recorded: string | null }[];

  /** Per transaction id: how many requests the provider received, and whether one was paid. */
  const received = (requests: { url: string; paid: boolean }[], pattern: RegExp) => {
    const byId = new Map<string, { count: number; paid: boolean }>();
    for (const r of requests) {
      const id = pattern.exec(r.url)?.[1] ?? r.url;
      const seen = byId.get(id) ?? { count: 0, paid: false };
      byId.set(id, { count: seen.count + 1, paid: seen.paid || r.paid });
    }
    return byId;
  };
  const payouts = received(
    payments.map((p) => ({ url: p.resultUrl, paid: p.state === 'completed' })),
    PAYOUT_URL,
  );
  const prompts = received(
    pushes.map((p) => ({ url: p.callbackUrl, paid: p.state === 'final' && String(p.resultCode) === '0' })),
    PUSH_URL,
  );
  // What the provider's callbacks for a transaction came to at our end (never their bodies or URLs).
  const deliveries = new Map<string, string[]>();
  for (const c of callbacks) {
    const id = (c.kind === 'stk' ? PUSH_URL : PAYOUT_URL).exec(c.url)?.[1];
    if (!id) continue;
    const answer = c.lost ? 'lost on purpose' : c.status !== undefined ? `HTTP ${c.status}` : `no answer (${c.error})`;
    deliveries.set(id, [...(deliveries.get(id) ?? []), `${c.kind} ${answer}`]);
  }
  const disagreements: string[] = [];
  for (const t of ours) {
    if (t.status !== 'POSTED' && t.status !== 'FAILED') continue; // in flight: the not-final count has it
    const there = (t.type === 'SEND_MONEY' ? payouts : prompts).get(t.id);
    const paid = there?.paid ?? false;
    if (paid !== (t.status === 'POSTED'))
      disagreements.push(
        `${t.type} ${t.id}: ${t.status} here, ${there ? (paid ? 'paid' : 'not paid') : 'never received'} at the ` +
          `provider; its callbacks: ${deliveries.get(t.id)?.join(', ') ?? 'none sent'}, ` +
          `recorded here: ${t.recorded ?? 'none'}`,
      );
  }
  const twice = (byId: Map<string, { count: number }>) => [...byId.values()].filter((r) => r.count > 1).length;
  return {
    payoutsSentTwice: twice(payouts),
    pushesSentTwice: twice(prompts),
    disagreements,
    undeliveredCallbacks: callbacks.filter((c) => !c.lost && (c.status === undefined || c.status >= 500)).length,
  };
}

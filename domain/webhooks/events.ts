import { TRANSACTION_DATES, type TransactionFields, transactionView } from '../mobile-money/views';

/**
 * The events a client app can subscribe to, each rendering its resource as the API answers it,
 * from the row committed with the change (db triggers write the snapshot; see the webhooks
 * migration). A type is listed here only once its trigger emits it.
 */
type Snapshot = Record<string, unknown>;

/** Timestamp columns come back from a JSON snapshot as text: dates again, as the row had them. */
function withDates<T>(snapshot: Snapshot, columns: readonly string[]): T {
  const row: Snapshot = { ...snapshot };
  for (const column of columns) {
    const value = row[column];
    row[column] = typeof value === 'string' ? new Date(value) : null;
  }
  return row as T;
}

const transaction = (snapshot: Snapshot) => transactionView(withDates<TransactionFields>(snapshot, TRANSACTION_DATES));

const RENDERERS = {
  /** A push or payout reached POSTED: the money is in the ledger. */
  'transaction.posted': transaction,
  /** A push or payout FAILED (failure_reason says why); nothing stays held. */
  'transaction.failed': transaction,
} satisfies Record<string, (snapshot: Snapshot) => unknown>;

export type EventType = keyof typeof RENDERERS;
export const EVENT_TYPES = Object.keys(RENDERERS) as EventType[];
export const isEventType = (type: string): type is EventType => Object.hasOwn(RENDERERS, type);

export interface StoredEvent {
  id: string;
  type: string;
  occurred_at: Date;
  snapshot: Snapshot;
}

/** An event as delivered and as the API lists it: its id, type, time and the resource. */
export function eventView(event: StoredEvent) {
  const render = isEventType(event.type) ? RENDERERS[event.type] : undefined;
  if (!render) throw new Error(`no rendering for event type ${event.type}`);
  return { id: event.id, type: event.type, timestamp: event.occurred_at.toISOString(), data: render(event.snapshot) };
}

import {
  ACTIVATION_DATES,
  type ActivationFields,
  activationView,
  PHONE_CHANGE_DATES,
  type PhoneChangeFields,
  phoneChangeView,
} from '../current-account/views';
import { INVOICE_DATES, type InvoiceFields, invoiceView } from '../financing/views';
import { ENDPOINT_DATES, type EndpointFields, endpointView } from './endpoints';
import { type ApplicationState, statusView } from '../kyc/status';
import {
  appliedView,
  type InstallmentFields,
  installmentView,
  LOAN_APPLICATION_DATES,
  LOAN_DATES,
  type LoanApplicationFields,
  type LoanFields,
  loanView,
} from '../loans/views';
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

/** What rendering needs beyond the snapshot: the settings some resources are drawn with, and when it happened. */
export interface RenderContext {
  /** The service's public base URL (links in a phone change). */
  baseUrl: string | undefined;
  /** KYC_MAX_RESUBMISSIONS: whether a rejected applicant may submit again. */
  kycMaxResubmissions: number;
  occurredAt: Date;
}
type Render = (snapshot: Snapshot, context: RenderContext) => unknown;

const transaction: Render = (snapshot) => transactionView(withDates<TransactionFields>(snapshot, TRANSACTION_DATES));

const RENDERERS = {
  /** A push or payout reached POSTED: the money is in the ledger. The Transaction (GET /v1/transactions/{id}). */
  'transaction.posted': transaction,
  /** A push or payout FAILED (failure_reason says why); nothing stays held. The Transaction. */
  'transaction.failed': transaction,
  /** A KYC application was APPROVED or REJECTED: its status resource (GET .../kyc/applications/{id}/status). */
  'kyc.application.completed': (snapshot, context) =>
    statusView(
      withDates<ApplicationState>(snapshot, ['reapply_blocked_until']),
      context.occurredAt,
      context.kycMaxResubmissions,
    ),
  /** A loan's money reached the borrower: its application, as the apply answer shows it (status DISBURSED). */
  'loan.disbursed': (snapshot) => appliedView(withDates<LoanApplicationFields>(snapshot, LOAN_APPLICATION_DATES)),
  /** An installment went OVERDUE: the installment, as the installments list shows it. */
  'installment.overdue': (snapshot) => installmentView(snapshot as unknown as InstallmentFields),
  /** Every installment of a loan is paid: the loan (ids, amounts, disbursed_at, closed_at). */
  'loan.repaid': (snapshot) => loanView(withDates<LoanFields>(snapshot, LOAN_DATES)),
  /** The bank onboarded the customer: the activation (COMPLETED), as GET .../current/activation shows it. */
  'current_account.activated': (snapshot) => activationView(withDates<ActivationFields>(snapshot, ACTIVATION_DATES)),
  /** A mobile-number change COMPLETED at the bank: the change, as GET .../phone/changes/{id} shows it. */
  'phone_change.completed': (snapshot, context) =>
    phoneChangeView(context.baseUrl, withDates<PhoneChangeFields>(snapshot, PHONE_CHANGE_DATES)),
  /** An invoice's extraction read it (EXTRACTED): the invoice, as GET .../invoices/{id} shows it. */
  'invoice.extracted': (snapshot) => invoiceView(withDates<InvoiceFields>(snapshot, INVOICE_DATES)),
  /**
   * A webhook endpoint was disabled, by its organization or after failing for WEBHOOK_DISABLE_AFTER
   * (disabled_reason says which): the endpoint, as GET /v1/webhooks/endpoints/{id} shows it.
   */
  'webhook_endpoint.disabled': (snapshot) => endpointView(withDates<EndpointFields>(snapshot, ENDPOINT_DATES)),
} satisfies Record<string, Render>;

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
export function eventView(event: StoredEvent, settings: Omit<RenderContext, 'occurredAt'>) {
  const render: Render | undefined = isEventType(event.type) ? RENDERERS[event.type] : undefined;
  if (!render) throw new Error(`no rendering for event type ${event.type}`);
  const data = render(event.snapshot, { ...settings, occurredAt: event.occurred_at });
  return { id: event.id, type: event.type, timestamp: event.occurred_at.toISOString(), data };
}

/** The rendering settings from the service's configuration. */
export const renderSettings = (config: { PUBLIC_BASE_URL?: string; KYC_MAX_RESUBMISSIONS: number }) => ({
  baseUrl: config.PUBLIC_BASE_URL,
  kycMaxResubmissions: config.KYC_MAX_RESUBMISSIONS,
});

import type { Knex } from 'knex';

/**
 * The rest of the event catalogue, one trigger per resource (see the webhooks migration): each
 * fires when its row's status becomes the event's state, in the transaction that commits it.
 * Snapshots keep only what the event renders: no phone numbers, bank ids or tokens.
 */
interface EventTrigger {
  table: string;
  /** SQL: the event type for `new`, or null for no event (old.status already differs from new.status). */
  type: string;
  snapshot: string;
}

const TRIGGERS: EventTrigger[] = [
  {
    table: 'kyc_applications',
    type: `case when new.status in ('APPROVED', 'REJECTED') then 'kyc.application.completed' end`,
    snapshot: `jsonb_build_object('id', new.id, 'status', new.status, 'needs_review', new.needs_review,
      'resubmission_count', new.resubmission_count, 'reapply_blocked_until', new.reapply_blocked_until)`,
  },
  {
    table: 'loan_applications',
    type: `case when new.status = 'DISBURSED' then 'loan.disbursed' end`,
    snapshot: `to_jsonb(new)`,
  },
  {
    table: 'loans',
    type: `case when new.status = 'REPAID' then 'loan.repaid' end`,
    snapshot: `jsonb_build_object('id', new.id, 'application_id', new.application_id, 'account_id', new.account_id,
      'status', new.status, 'principal', new.principal, 'interest', new.interest, 'currency', new.currency,
      'disbursed_at', new.disbursed_at, 'closed_at', new.closed_at)`,
  },
  {
    table: 'installments',
    type: `case when new.status = 'OVERDUE' then 'installment.overdue' end`,
    snapshot: `to_jsonb(new) || jsonb_build_object('due_date', to_char(new.due_date, 'YYYY-MM-DD'),
      'currency', (select currency from loans where id = new.loan_id))`,
  },
  {
    table: 'current_account_activations',
    type: `case when new.status = 'COMPLETED' then 'current_account.activated' end`,
    snapshot: `jsonb_build_object('id', new.id, 'status', new.status, 'channel', new.channel,
      'rejection_reason', new.rejection_reason, 'created_at', new.created_at, 'otp_confirmed_at', new.otp_confirmed_at,
      'completed_at', new.completed_at, 'rejected_at', new.rejected_at)`,
  },
  {
    table: 'phone_changes',
    type: `case when new.status = 'COMPLETED' then 'phone_change.completed' end`,
    snapshot: `jsonb_build_object('id', new.id, 'status', new.status, 'authorization_channel', new.authorization_channel,
      'rejection_reason', new.rejection_reason, 'created_at', new.created_at, 'authorized_at', new.authorized_at,
      'completed_at', new.completed_at, 'rejected_at', new.rejected_at)`,
  },
  {
    table: 'financing_invoices',
    type: `case when new.status = 'EXTRACTED' then 'invoice.extracted' end`,
    snapshot: `jsonb_build_object('id', new.id, 'document_id', new.document_id, 'status', new.status,
      'amount_minor_units', new.amount_minor_units, 'currency', new.currency,
      'issued_date', to_char(new.issued_date, 'YYYY-MM-DD'), 'due_date', to_char(new.due_date, 'YYYY-MM-DD'),
      'details', new.details, 'failure_reason', new.failure_reason, 'created_at', new.created_at)`,
  },
];

export async function up(knex: Knex): Promise<void> {
  for (const { table, type, snapshot } of TRIGGERS) {
    await knex.raw(`
      create function webhook_${table}_events() returns trigger language plpgsql as $$
      declare
        event_type text := ${type};
      begin
        if event_type is not null and (tg_op = 'INSERT' or old.status is distinct from new.status) then
          perform webhook_emit(new.organization_id, event_type, new.id::text, ${snapshot});
        end if;
        return null;
      end $$`);
    await knex.raw(`create trigger ${table}_webhook_events after insert or update of status on ${table}
      for each row execute function webhook_${table}_events()`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const { table } of TRIGGERS) {
    await knex.raw(`drop trigger if exists ${table}_webhook_events on ${table}`);
    await knex.raw(`drop function if exists webhook_${table}_events()`);
  }
}

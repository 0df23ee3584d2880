import type { Knex } from 'knex';
import type { Actor, Operation, Started } from './callbacks-workload';

/**
 * An operation's final state as the two runs compare it: what a customer, an applicant or the
 * ledger would see, without ids and times (they differ between runs by nature) and without a
 * push's receipt (a push settled by the status query has none: the query carries no receipt).
 * Also the provider request ids its callbacks name, to find them in the simulators' records.
 */
export interface OperationState {
  /** Absent while the operation is not final. */
  final: boolean;
  state: Record<string, unknown>;
  /** CheckoutRequestID, OriginatorConversationID (our transaction id), our KYC job id, the SMS message id. */
  requests: string[];
  /** For reading a mismatch, not compared: how the service took a transaction's callbacks, what the provider made of a verification. */
  evidence?: string[];
}

const numbers = (row: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v]),
  );

async function transactionState(db: Knex, id: string, repayment: boolean): Promise<OperationState> {
  const row = (await db('transactions')
    .where({ id })
    .first('status', 'failure_reason', 'amount', 'fee_amount', 'checkout_request_id', 'type')) as
    Record<string, unknown> | undefined;
  if (!row) return { final: false, state: { missing: true }, requests: [] };
  const entries = (await db('journal_entries as j')
    .join('ledger_legs as l', 'l.journal_entry_id', 'j.id')
    .where('j.transaction_id', id)
    .where('l.amount', '>', 0)
    .groupBy('j.kind')
    .orderBy('j.kind')
    .select('j.kind', db.raw('sum(l.amount) as amount'))) as { kind: string; amount: string }[];
  const state: Record<string, unknown> = {
    status: row.status,
    failure_reason: row.failure_reason,
    ...numbers({ amount: row.amount, fee_amount: row.fee_amount }),
    ledger: Object.fromEntries(entries.map((e) => [e.kind, Number(e.amount)])),
  };
  let final = row.status === 'POSTED' || row.status === 'FAILED';
  if (repayment) {
    const event = (await db('loan_transactions')
      .where({ transaction_id: id })
      .first('id', 'amount', 'allocated_amount', 'overpaid_amount')) as Record<string, unknown> | undefined;
    const allocations = event
      ? ((await db('installment_allocations')
          .where({ event_id: event.id })
          .orderBy('position')
          .select(
            'position',
            'allocated_amount',
            'principal_amount',
            'interest_amount',
            'arrears_amount',
            'effect',
          )) as Record<string, unknown>[])
      : [];
    const { id: _id, ...amounts } = event ?? {};
    state.repayment = event ? { ...numbers(amounts), allocations: allocations.map(numbers) } : null;
    // A posted repayment is final once its loan's run allocated it.
    if (row.status === 'POSTED' && !event) final = false;
  }
  const requests =
    row.type === 'SEND_MONEY' ? [id] : row.checkout_request_id ? [row.checkout_request_id as string] : [];
  return { final, state, requests };
}

async function applicationState(db: Knex, id: string): Promise<OperationState> {
  const row = (await db('kyc_applications')
    .where({ id })
    .first(
      'status',
      'outcome',
      'result_code',
      'reason',
      'needs_review',
      'resubmission_count',
      'api_version',
      'job_id',
      db.raw('provider_job_id is not null as provider_job_known'),
      db.raw('reapply_blocked_until is not null as reapply_blocked'),
    )) as Record<string, unknown> | undefined;
  if (!row) return { final: false, state: { missing: true }, requests: [] };
  const { job_id: jobId, ...state } = row;
  return { final: row.status !== 'ID_VERIFICATION_PENDING', state, requests: jobId ? [jobId as string] : [] };
}

async function activationState(db: Knex, userId: string): Promise<OperationState> {
  const sends = (await db('otp_sends')
    .where({ user_id: userId, purpose: 'ACTIVATION' })
    .orderBy('id')
    .select('channel', 'provider_message_id', 'delivery_status', 'delivery_failure_reason')) as Record<
    string,
    unknown
  >[];
  return {
    // Final once its text went out; how it fared is what the comparison reads.
    final: sends.length > 0 && sends.every((s) => s.provider_message_id),
    state: { sends: sends.map(({ provider_message_id: _id, ...send }) => send) },
    requests: sends.map((s) => s.provider_message_id as string).filter(Boolean),
  };
}

export function operationState(db: Knex, op: Operation, actor: Actor, started: Started): Promise<OperationState> {
  if (started.transactionId) return transactionState(db, started.transactionId, op.kind === 'repayment');
  if (started.applicationId) return applicationState(db, started.applicationId);
  return activationState(db, actor.id);
}

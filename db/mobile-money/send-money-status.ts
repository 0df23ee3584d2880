import type { Knex } from 'knex';

/**
 * The Transaction Status queries a send-money run asked about its payout. They are the run's own
 * rows, looked up by transaction id, as db/mobile-money/transactions.ts explains for the run's
 * steps. A status Result names its query by id alone, and the caller checks its token.
 */
export interface StatusQueryRow {
  id: string;
  transaction_id: string;
  organization_id: string;
  token: string;
  asked_at: Date;
  conversation_id: string | null;
  originator_conversation_id: string | null;
  answered: string | null;
}

/** Records a query about to be asked (its token is in its ResultURL). */
export async function createStatusQuery(
  db: Knex,
  query: Pick<StatusQueryRow, 'id' | 'transaction_id' | 'organization_id' | 'token' | 'asked_at'>,
): Promise<void> {
  await db('payout_status_queries').insert(query);
}

/** The provider's answer to the query: its own ids, which its Result must carry. */
export async function recordStatusQueryAnswer(
  db: Knex,
  id: string,
  answer: { conversationId: string; originatorConversationId: string },
): Promise<void> {
  await db('payout_status_queries').where({ id }).update({
    conversation_id: answer.conversationId,
    originator_conversation_id: answer.originatorConversationId,
  });
}

export const findStatusQuery = (db: Knex, id: string) =>
  db('payout_status_queries').where({ id }).first<StatusQueryRow | undefined>();

/**
 * Takes the query's one answer (what it said), atomically: the provider answers a query once,
 * so a second checked Result is a copy or someone replaying its ids. Undefined when taken; else
 * what the first said.
 */
export async function claimStatusAnswer(db: Knex, id: string, said: string): Promise<string | undefined> {
  const taken = await db('payout_status_queries').where({ id }).whereNull('answered').update({ answered: said });
  if (taken > 0) return undefined;
  const row = await db('payout_status_queries').where({ id }).first<Pick<StatusQueryRow, 'answered'>>('answered');
  return row?.answered ?? '';
}

/** Gives the answer back when it could not be handed to the run: the provider's retry is taken. */
export async function returnStatusAnswer(db: Knex, id: string): Promise<void> {
  await db('payout_status_queries').where({ id }).update({ answered: null });
}

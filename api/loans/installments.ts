import { z } from 'zod';
import { accountInstallments } from '../../db/loans/loans';
import { installmentView } from '../../domain/loans/views';
import { Permission } from '../../domain/rbac';
import type { Caller } from '../auth/caller';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute } from '../route';
import { readableAccount } from './accounts';

const Components = z.strictObject({
  principal: z.number().int(),
  interest: z.number().int(),
  penalties: z.number().int(),
  total: z.number().int(),
});
const Installment = z
  .strictObject({
    id: z.uuid(),
    loan_id: z.uuid(),
    position: z.number().int().meta({ description: '1-based, in due-date order within its loan' }),
    due_date: z.string().meta({ description: 'YYYY-MM-DD' }),
    amount: Components.meta({ description: 'What the installment asks for, minor units' }),
    paid: Components,
    outstanding: Components,
    currency: z.string(),
    status: z.enum(['UPCOMING', 'DUE', 'OVERDUE', 'PAID']).meta({
      description:
        'UPCOMING before its due date → DUE on it → OVERDUE from the day after while anything is outstanding; PAID once paid in full',
    }),
  })
  .meta({ id: 'Installment' });

/**
 * GET /v1/accounts/{accountId}/installments (spec 4.3, path not shown: ours): the schedule of
 * every loan on a lending account, newest loan first. Only the account's owner (or staff and
 * keys of its organization with accounts.read) sees it; anyone else gets 404.
 */
export function installmentRoutes(deps: Needs<'db'>): AnyRoute[] {
  const { db } = deps;
  return [
    defineRoute({
      method: 'get',
      path: '/v1/accounts/{accountId}/installments',
      operationId: 'listInstallments',
      summary: "A lending account's installment schedule",
      tags: ['loans'],
      auth: { schemes: ['user', 'partner', 'api_key'], permission: Permission.ACCOUNTS_READ, refuseWaitingList: true },
      request: { params: z.object({ accountId: z.uuid() }) },
      responses: { 200: { description: 'The schedule', schema: z.strictObject({ data: z.array(Installment) }) } },
      errors: {
        NOT_FOUND: 'no such account of the caller (another organization’s or another user’s is not confirmed)',
      },
      async handler(ctx, { params }) {
        const organizationId = await readableAccount(db, ctx.state.caller as Caller, params.accountId);
        const rows = await accountInstallments(db, organizationId, params.accountId);
        ctx.body = { data: rows.map(installmentView) };
      },
    }),
  ];
}

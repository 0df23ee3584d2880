import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';

import {
  accountEventsPage,
  type Gate,
  gateRefusal,
  installmentAllocationsPage,
  type Item,
  type Page,
} from '../../db/loans/transactions';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { Permission } from '../../domain/rbac';
import type { Caller } from '../auth/caller';
import type { Needs } from '../deps';
import { Transaction } from '../mobile-money/views';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { notReadable, readableAccountGate } from './accounts';

/** Page sizes (spec 8): greater than 0, 20 unless asked, at most 100. */
export const PAGE_SIZE = { default: 20, max: 100 } as const;
const MAX_SEQ = 2n ** 63n - 1n;

/**
 * A cursor is opaque to clients: base64url of `s<seq>.<tag>`, the keyset position of a page's end
 * and a tag of the list it belongs to (an account's, or an installment's), so a cursor of another
 * list is refused rather than read as a position in this one.
 */
const tagOf = (scope: string) => createHash('sha256').update(scope).digest('base64url').slice(0, 10);
export const encodeCursor = (seq: string | bigint, scope: string) =>
  Buffer.from(`s${seq}.${tagOf(scope)}`).toString('base64url');
function decodeCursor(cursor: string, scope: string): bigint | undefined {
  const match = /^s(\d{1,19})\.[A-Za-z0-9_-]{10}$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!match || encodeCursor(match[1]!, scope) !== cursor) return undefined;
  const seq = BigInt(match[1]!);
  return seq <= MAX_SEQ ? seq : undefined;
}
const Cursor = z
  .string()
  .max(64)
  .regex(/^[A-Za-z0-9_-]+$/)
  .meta({ description: 'Opaque: the `after` or `before` of a previous page’s links of the same list' });

const PageQuery = z.strictObject({
  size: z.coerce
    .number()
    .int()
    .min(1)
    .max(PAGE_SIZE.max)
    .default(PAGE_SIZE.default)
    .meta({ description: `Greater than 0, default ${PAGE_SIZE.default}, at most ${PAGE_SIZE.max}` }),
  after: Cursor.optional(),
  before: Cursor.optional(),
});

export const InstallmentAllocation = z
  .strictObject({
    id: z.uuid(),
    balance_id: z.uuid().meta({ description: 'The installment (the balance owed) the record applies to' }),
    cycle_id: z
      .uuid()
      .meta({ description: 'The loan the installment belongs to: a term loan, or one revolving-credit draw' }),
    position: z.number().int().meta({ description: "The installment's position in its cycle (1-based)" }),
    allocated_amount: z.number().int().meta({
      description: 'Minor units: principal_amount + interest_amount + arrears_amount; negative on a REVERSAL record',
    }),
    principal_amount: z.number().int(),
    interest_amount: z.number().int(),
    arrears_amount: z.number().int().meta({ description: 'The part that paid penalty charges (for being in arrears)' }),
    allocated_at: z.string(),
    effect: z.enum(['OBLIGATION_SETTLED', 'PARTIALLY_SETTLED', 'REVERSED', 'WAIVED']).meta({
      description:
        'OBLIGATION_SETTLED: the installment owed nothing afterwards; PARTIALLY_SETTLED: it still owed; REVERSED: an offsetting ' +
        'record of a reversal (amounts negative); WAIVED: forgiven by a waiver',
    }),
    source: z.enum(['LIVE', 'REVERSAL', 'WAIVER']).meta({
      description:
        'LIVE: a repayment as it arrived; REVERSAL: an operator reversed a repayment; WAIVER: an operator forgave amounts',
    }),
  })
  .meta({ id: 'InstallmentAllocation' });

const Links = z
  .strictObject({
    next: z.string().nullable().meta({ description: 'Older transactions; null on the last page' }),
    prev: z.string().nullable().meta({ description: 'Newer transactions; null on the first page' }),
  })
  .meta({ id: 'PageLinks' });

const READER: RouteAuth = {
  schemes: ['user', 'partner', 'api_key'],
  permission: Permission.ACCOUNTS_READ,
  refuseWaitingList: true,
};
const LIST_ERRORS = {
  BAD_REQUEST:
    'two variants: "Invalid input: <field>: <reason>" for a size outside 1..100 or a cursor this list did not give out (query.size, ' +
    'query.after, query.before), and "Bad Request" for after and before sent together',
  NOT_FOUND:
    "no such account (or installment) of the caller: another organization's or another customer's is not confirmed",
};

/** The page's links: the same path and size, a cursor at the page's far ends; null where nothing lies. */
function links(path: string, scope: string, size: number, page: Page<{ seq: string }>) {
  const link = (key: 'after' | 'before', seq: string) => `${path}?size=${size}&${key}=${encodeCursor(seq, scope)}`;
  return {
    next: page.older ? link('after', page.rows.at(-1)!.seq) : null,
    prev: page.newer ? link('before', page.rows[0]!.seq) : null,
  };
}

/** The items as they were written with their events: passed on, not parsed and serialised again. */
function answerPage(ctx: Context, page: Page<Item>, pageLinks: ReturnType<typeof links>) {
  ctx.type = 'application/json';
  ctx.body = `{"data":[${page.rows.map((row) => row.view).join(',')}],"links":${JSON.stringify(pageLinks)}}`;
}

/**
 * The two installment transaction lists (spec 4.3): every transaction event of a lending account
 * with the allocation records it made, and one installment's allocation records with their
 * events, closed revolving cycles included. Newest first, keyset-paged both ways.
 */
export function installmentTransactionRoutes(deps: Needs<'db'>): AnyRoute[] {
  const { db } = deps;

  function pageOf(query: z.output<typeof PageQuery>, scope: string) {
    if (query.after !== undefined && query.before !== undefined)
      throw new ServiceError(ErrorCode.BAD_REQUEST, 'Bad Request');
    const position = (key: 'after' | 'before') => {
      const cursor = query[key];
      if (cursor === undefined) return undefined;
      const seq = decodeCursor(cursor, scope);
      if (seq === undefined)
        throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
          { path: `query.${key}`, reason: 'not a cursor this list gave out', sub_code: SubCode.INVALID_VALUE },
        ]);
      return seq;
    };
    return { size: query.size, after: position('after'), before: position('before') };
  }

  /**
   * The page asked for; a query this list refuses (400) is answered only once the account (and
   * the installment) is known readable, as the reads in the page's statement would have: another
   * tenant's account stays 404 whatever the query.
   */
  async function pageOrNotFound(gate: Gate, page: () => ReturnType<typeof pageOf>) {
    try {
      return page();
    } catch (error) {
      const refused = await gateRefusal(db, gate);
      throw refused ? notReadable(refused) : error;
    }
  }

  return [
    defineRoute({
      method: 'get',
      path: '/v1/accounts/{accountId}/installments/transactions',
      operationId: 'listInstallmentTransactions',
      summary: "A lending account's transactions, each with the installment allocations it made",
      description:
        'Newest first. Repayments (push prompts on the credit account), reversals and waivers; a repayment that paid no ' +
        'installment (all overpayment) has no allocations. Cursor paging: follow links.next (older) and links.prev (newer); ' +
        'each is null at its end. Pages stay put while new transactions arrive (they appear before the first page).',
      tags: ['loans'],
      auth: READER,
      request: { params: z.object({ accountId: z.uuid() }), query: PageQuery },
      responses: {
        200: {
          description: 'A page',
          schema: z.strictObject({
            data: z.array(z.strictObject({ transaction: Transaction, installments: z.array(InstallmentAllocation) })),
            links: Links,
          }),
        },
      },
      errors: LIST_ERRORS,
      async handler(ctx, { params, query }) {
        const caller = ctx.state.caller as Caller;
        const gate = readableAccountGate(caller, params.accountId);
        const scope = `account:${params.accountId}`;
        const position = await pageOrNotFound(gate, () => pageOf(query, scope));
        const page = await accountEventsPage(db, caller.organizationId!, params.accountId, position, gate);
        if ('refused' in page) throw notReadable(page.refused);
        answerPage(ctx, page, links(ctx.path, scope, query.size, page));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/accounts/{accountId}/installments/{id}/transactions',
      operationId: 'listInstallmentAllocations',
      summary: "One installment's allocations, each with its transaction",
      description:
        'Newest first, the same paging as the account list. Installments of closed revolving-credit cycles keep their history.',
      tags: ['loans'],
      auth: READER,
      request: { params: z.object({ accountId: z.uuid(), id: z.uuid() }), query: PageQuery },
      responses: {
        200: {
          description: 'A page',
          schema: z.strictObject({
            data: z.array(z.strictObject({ transaction: Transaction, allocation: InstallmentAllocation })),
            links: Links,
          }),
        },
      },
      errors: LIST_ERRORS,
      async handler(ctx, { params, query }) {
        const caller = ctx.state.caller as Caller;
        const gate = readableAccountGate(caller, params.accountId, params.id);
        const scope = `installment:${params.id}`;
        const position = await pageOrNotFound(gate, () => pageOf(query, scope));
        const page = await installmentAllocationsPage(db, caller.organizationId!, params.id, position, gate);
        if ('refused' in page) throw notReadable(page.refused);
        answerPage(ctx, page, links(ctx.path, scope, query.size, page));
      },
    }),
  ];
}

import type Router from '@koa/router';
import { ERROR_CODES } from '../../providers/bank/protocol';
import { controlRouter } from '../server';
import { fail } from './api';
import { Mode } from './model';
import { resetBankState, type BankState } from './state';

/** The control API (tests): the mode, what was recorded, the tokens, and a reset (see ./index.ts). */
export function bankControl(state: BankState): Router {
  const control = controlRouter();
  control.get('/mode', (ctx) => {
    ctx.body = state.mode;
  });
  control.patch('/mode', (ctx) => {
    const parsed = Mode.safeParse(ctx.request.body);
    if (!parsed.success) return fail(ctx, 400, ERROR_CODES.validation, 'Invalid mode', parsed.error.issues);
    state.mode = { ...state.mode, ...parsed.data };
    ctx.body = state.mode;
  });
  control.get('/customers', (ctx) => {
    ctx.body = [...state.customers.values()];
  });
  control.get('/mobile-number-changes', (ctx) => {
    ctx.body = [...state.changes.values()];
  });
  control.get('/tokens', (ctx) => {
    ctx.body = { issued: state.tokensIssued, live: [...state.tokens.values()].filter((at) => at > Date.now()).length };
  });
  control.post('/tokens/expire', (ctx) => {
    for (const token of state.tokens.keys()) state.tokens.set(token, 0);
    ctx.status = 204;
  });
  control.post('/reset', (ctx) => {
    resetBankState(state);
    ctx.status = 204;
  });
  return control;
}

import { controlRouter } from '../server';
import { reject } from './checks';
import type { SimulatorCallbacks } from './callbacks';
import { BAD_REQUEST, modeSchema, payoutOutcome, type RunningMobileMoneySimulator } from './model';
import type { SimulatorState } from './state';
import { z } from 'zod';

/** The control API under /_control, and the same operations for tests in the same process. */
export function simulatorControl(state: SimulatorState, callbacks: SimulatorCallbacks) {
  const { post, flush, stkDelivery, b2cDelivery, decidePush, decidePayment } = callbacks;

  const control: RunningMobileMoneySimulator['control'] = {
    reset() {
      state.timers.clear();
      for (const store of [state.pushes, state.payments, state.originatorIds, state.receipts, state.processingAnswered])
        store.clear();
      state.sent.length = 0;
      state.statusQueries.length = 0;
      state.statusResultsLostSoFar = 0;
      state.held = [];
      state.mode = state.defaults();
      state.chaos.configure(null);
    },
    setMode(patch) {
      const leavingReorder =
        state.mode.callbacks === 'reorder' && patch.callbacks !== undefined && patch.callbacks !== 'reorder';
      state.mode = { ...state.mode, ...patch };
      // Each push gets a fresh budget of "being processed" answers.
      if (patch.processingQueries !== undefined) state.processingAnswered.clear();
      if (patch.statusResultsLost !== undefined) state.statusResultsLostSoFar = 0;
      // Chaos settings given (again) start a new plan and record; null turns it off.
      if (patch.chaos !== undefined) state.chaos.configure(patch.chaos);
      if (leavingReorder) void flush();
      return { ...state.mode };
    },
    pushes: () => [...state.pushes.values()],
    payments: () => [...state.payments.values()],
    statusQueries: () => [...state.statusQueries],
    callbacks: () => [...state.sent],
    flush,
    revokeTokens: () => state.tokens.clear(),
    chaos: () => state.chaos.records(),
  };

  const controlApi = controlRouter();
  controlApi.post('/reset', (ctx) => {
    control.reset();
    ctx.status = 204;
  });
  /** The certificate to encrypt the B2C SecurityCredential with (a client SDK's certPath / certificatePath). */
  controlApi.get('/certificate', (ctx) => {
    ctx.type = 'application/x-pem-file';
    ctx.body = state.credentials.certificate;
  });
  controlApi.get('/mode', (ctx) => {
    ctx.body = state.mode;
  });
  controlApi.patch('/mode', (ctx) => {
    const patch = modeSchema.partial().safeParse(ctx.request.body);
    if (!patch.success) return reject(ctx, 400, BAD_REQUEST, z.prettifyError(patch.error));
    ctx.body = control.setMode(patch.data);
  });
  controlApi.get('/pushes', (ctx) => {
    ctx.body = control.pushes();
  });
  controlApi.get('/b2c', (ctx) => {
    ctx.body = control.payments();
  });
  controlApi.get('/status-queries', (ctx) => {
    ctx.body = control.statusQueries();
  });
  controlApi.get('/callbacks', (ctx) => {
    ctx.body = control.callbacks();
  });
  /** Chaos mode: per callback, its plan (copies, timing, forgery) and what the receiver answered. */
  controlApi.get('/chaos', (ctx) => {
    ctx.body = control.chaos();
  });
  controlApi.post('/callbacks/flush', async (ctx) => {
    await control.flush();
    ctx.status = 204;
  });
  /**
   * Sends a result callback now, once, whatever the mode; a pending request is decided first
   * (and gets no other callback). The body's keys override the callback: ResultCode and
   * ResultDesc, or a metadata item / result parameter by name (null removes it), e.g.
   * `{"Amount": 1}` for a wrong-amount callback. Accepts a CheckoutRequestID or an
   * OriginatorConversationID.
   */
  controlApi.post('/callbacks/:id/send', async (ctx) => {
    const overrides = (ctx.request.body ?? {}) as Record<string, unknown>;
    const push = state.pushes.get(ctx.params.id!);
    const payment = state.payments.get(ctx.params.id!);
    if (push) {
      decidePush(push, false);
      ctx.body = await post(stkDelivery(push, overrides));
    } else if (payment) {
      decidePayment(payment, payoutOutcome(payment), false);
      ctx.body = await post(b2cDelivery(payment, overrides));
    } else {
      reject(ctx, 404, '404.001.01', 'No such CheckoutRequestID or OriginatorConversationID');
    }
  });
  controlApi.post('/tokens/revoke', (ctx) => {
    control.revokeTokens();
    ctx.status = 204;
  });
  return { control, controlApi };
}

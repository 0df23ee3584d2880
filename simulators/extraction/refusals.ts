import type { Context } from 'koa';
import { AzureError, type AzureErrorObject } from '../../providers/extraction/protocol';
import type { SimulatorTimers } from '../server';
import type { SimulatorMode } from './model';

/**
 * Azure's answers when it will not do what it was asked: its error envelope `{error: {code,
 * message, innererror}}` with the status, codes and messages Azure gives (protocol.ts's
 * AzureError), and the fault modes the control API sets answering in its place.
 */

/** Azure's error envelope. */
export const refuse = (ctx: Context, status: number, error: AzureErrorObject) => {
  ctx.status = status;
  ctx.body = { error };
};

export const invalidArgument = (ctx: Context, inner: string, message: string) =>
  refuse(ctx, 400, {
    code: 'InvalidArgument',
    message: AzureError.invalidArgument,
    innererror: { code: inner, message },
  });

export const invalidRequest = (ctx: Context, inner: string, message: string) =>
  refuse(ctx, 400, {
    code: 'InvalidRequest',
    message: AzureError.invalidRequest,
    innererror: { code: inner, message },
  });

/** The gateway's answer to a path or api-version nothing serves. */
export const gatewayNotFound = (ctx: Context) => refuse(ctx, 404, { code: '404', message: AzureError.gatewayNotFound });

export const modelNotFound = (ctx: Context) =>
  refuse(ctx, 404, {
    code: 'NotFound',
    message: AzureError.resourceNotFound,
    innererror: { code: 'ModelNotFound', message: AzureError.modelNotFound },
  });

export const operationNotFound = (ctx: Context) =>
  refuse(ctx, 404, {
    code: 'NotFound',
    message: AzureError.resourceNotFound,
    innererror: { code: 'OperationNotFound', message: AzureError.operationNotFound },
  });

/** The error objects a failed analysis carries, and refusals' inner errors. */
export const invalidContent: AzureErrorObject = {
  code: 'InvalidRequest',
  message: AzureError.invalidRequest,
  innererror: { code: 'InvalidContent', message: AzureError.invalidContent },
};

/** A fault mode answering for Azure; true when it did. */
export async function fault(ctx: Context, mode: SimulatorMode['analyze'], timers: SimulatorTimers): Promise<boolean> {
  if (mode === 'normal') return false;
  if (mode === 'throttle') {
    ctx.set('Retry-After', '1');
    refuse(ctx, 429, { code: '429', message: AzureError.rateLimited(1) });
  } else if (mode === 'error')
    refuse(ctx, 500, { code: 'InternalServerError', message: AzureError.internalServerError });
  else {
    await timers.hold(60_000, (cancel) => ctx.res.once('close', cancel));
    refuse(ctx, 503, { code: 'ServiceUnavailable', message: AzureError.serviceUnavailable });
  }
  return true;
}

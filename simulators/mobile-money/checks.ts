import { jsonText } from '../../domain/text';
import type { Context } from 'koa';
import { BAD_REQUEST, INVALID_TOKEN, requestId } from './model';
import type { SimulatorState } from './state';

/** A JSON value as text for checks and records: strings and numbers as they are, anything else empty. */
export const str = (value: unknown): string => jsonText(value) ?? '';

/** Answers as the provider does: `{requestId, errorCode, errorMessage}` with its HTTP status. */
export const reject = (ctx: Context, status: number, errorCode: string, errorMessage: string) => {
  ctx.status = status;
  ctx.body = { requestId: requestId(), errorCode, errorMessage };
};

/** Runs [field, valid] checks in order and answers the first failure Daraja-style. */
export const validate = (ctx: Context, checks: [string, boolean][]) => {
  const failed = checks.find(([, valid]) => !valid);
  if (failed) reject(ctx, 400, BAD_REQUEST, `Bad Request - Invalid ${failed[0]}`);
  return !failed;
};

/** A live Bearer token, else the provider's 404.001.03 (an expired one is forgotten on sight). */
export const authorized = (state: SimulatorState, ctx: Context) => {
  const token = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
  const expiresAt = token === undefined ? undefined : state.tokens.get(token);
  if (expiresAt !== undefined && expiresAt > Date.now()) return true;
  if (token !== undefined && expiresAt !== undefined) state.tokens.delete(token);
  reject(ctx, 404, INVALID_TOKEN, 'Invalid Access Token');
  return false;
};

/**
 * Whether a B2C or Transaction Status request names the configured initiator (its name under
 * `nameField`) and a SecurityCredential that decrypts to its password. A wrong one is accepted
 * and answered 2001 in the Result, as the provider does.
 */
export const initiatorValid = (state: SimulatorState, body: Record<string, unknown>, nameField: string) =>
  (state.options.initiatorName === undefined || body[nameField] === state.options.initiatorName) &&
  (state.options.initiatorPassword === undefined ||
    state.credentials.decrypt(str(body.SecurityCredential)) === state.options.initiatorPassword);

import { createHash, timingSafeEqual } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import {
  API_VERSION,
  AzureError,
  analyzePath,
  analyzeResultPath,
  INVOICE_MODEL_ID,
  KEY_HEADER,
} from '../../providers/extraction/protocol';
import type { SimulatorTimers } from '../server';
import { type SimulatorMode, type Stored, statusOf } from './model';
import {
  fault,
  gatewayNotFound,
  invalidArgument,
  invalidRequest,
  modelNotFound,
  operationNotFound,
  refuse,
} from './refusals';
import { type DocumentLimits, documentOf } from './requests';
import { readRaw } from './source';
import type { AnalysisStore } from './store';

/**
 * The provider's API as Azure serves it: the middleware before routing (every refusal in Azure's
 * envelope, the key then the api-version, the body read raw and bounded) and the three routes,
 * analyze (202 with Operation-Location), read a result (its status, then its result or error) and
 * delete a result.
 */
export interface ProviderApi {
  before: Middleware[];
  readBody: Middleware;
  api: Router;
}

export function providerApi(deps: {
  apiKey: string;
  limits: DocumentLimits;
  store: AnalysisStore;
  modes: { readonly current: SimulatorMode };
  timers: SimulatorTimers;
}): ProviderApi {
  const { limits, store, modes, timers } = deps;
  // A JSON body carries the document as Base64: 4/3 of it, and some room.
  const maxRequestBytes = Math.ceil((limits.maxDocumentBytes * 4) / 3) + 64 * 1024;
  const keyDigest = createHash('sha256').update(deps.apiKey).digest();

  /** Every refusal in Azure's envelope: unknown paths, bodies too large or unreadable. */
  const envelope: Middleware = async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) gatewayNotFound(ctx);
    } catch (error) {
      const status = (error as { status?: number }).status ?? 500;
      if (status === 413) invalidRequest(ctx, 'InvalidContentLength', AzureError.invalidContentLength);
      else if (status >= 400 && status < 500) invalidArgument(ctx, 'InvalidParameter', AzureError.bodyNotJson);
      else refuse(ctx, 500, { code: 'InternalServerError', message: AzureError.internalServerError });
    }
  };
  /** The key before anything else (the body is not even read without it), then the api-version. */
  const authorize: Middleware = async (ctx, next) => {
    if (ctx.path.startsWith('/_control')) return next();
    const key = ctx.get(KEY_HEADER);
    if (!key) return refuse(ctx, 401, { code: '401', message: AzureError.missingKey });
    if (!timingSafeEqual(createHash('sha256').update(key).digest(), keyDigest))
      return refuse(ctx, 401, { code: '401', message: AzureError.invalidKey });
    if (ctx.query['api-version'] !== API_VERSION) return gatewayNotFound(ctx);
    await next();
  };
  /** JSON for the control API; the raw bytes (bounded) for the provider's API. */
  const controlJson = bodyParser({ enableTypes: ['json'] });
  const readBody: Middleware = async (ctx, next) => {
    if (ctx.path.startsWith('/_control')) return controlJson(ctx, next);
    if (ctx.method === 'POST') ctx.state.raw = await readRaw(ctx.req, maxRequestBytes);
    await next();
  };

  const api = new Router();
  api.post(analyzePath(':modelId').replace(':analyze', '\\:analyze'), async (ctx) => {
    if (ctx.params.modelId !== INVOICE_MODEL_ID) return modelNotFound(ctx);
    if (await fault(ctx, modes.current.analyze, timers)) return;
    const found = await documentOf(ctx, limits);
    if (!found) return;
    const resultId = store.analyse(found.bytes, found.view);
    ctx.set(
      'Operation-Location',
      `${ctx.protocol}://${ctx.host}${analyzeResultPath(INVOICE_MODEL_ID, resultId)}?api-version=${API_VERSION}`,
    );
    ctx.status = 202;
    // An empty body (null would turn the status into 204).
    ctx.body = '';
  });

  const resultPath = analyzeResultPath(':modelId', ':resultId');
  /** The stored analysis a request names, or undefined once it answered 404. */
  const storedFor = (ctx: Context): Stored | undefined => {
    if (ctx.params.modelId !== INVOICE_MODEL_ID) return void modelNotFound(ctx);
    const stored = store.find(ctx.params.resultId ?? '');
    if (!stored) operationNotFound(ctx);
    return stored;
  };
  api.get(resultPath, async (ctx) => {
    if (ctx.params.modelId === INVOICE_MODEL_ID && (await fault(ctx, modes.current.result, timers))) return;
    const stored = storedFor(ctx);
    if (!stored) return;
    const now = Date.now();
    const status = statusOf(stored, now);
    const iso = (ms: number) => new Date(ms).toISOString();
    const updated =
      status === 'notStarted' ? stored.createdMs : status === 'running' ? stored.startedMs : stored.readyMs;
    if (status === 'notStarted' || status === 'running')
      ctx.set('Retry-After', String(Math.max(1, Math.ceil((stored.readyMs - now) / 1000))));
    ctx.body = {
      status,
      createdDateTime: iso(stored.createdMs),
      lastUpdatedDateTime: iso(updated),
      ...(status === 'failed' && stored.outcome.status === 'failed' && { error: stored.outcome.error }),
      ...(status === 'succeeded' &&
        stored.outcome.status === 'succeeded' && { analyzeResult: stored.outcome.analyzeResult }),
    };
  });
  api.delete(resultPath, (ctx) => {
    const stored = storedFor(ctx);
    if (!stored) return;
    store.forget(stored.view.resultId);
    ctx.status = 204;
  });

  return { before: [envelope, authorize], readBody, api };
}

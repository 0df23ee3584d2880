import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import getRawBody from 'raw-body';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { controlRouter, faultModes, SimulatorTimers, startSimulatorServer } from './server';

/**
 * A client app's webhook receiver (development and tests), for the service's outbound webhooks
 * signed per the Standard Webhooks spec (`webhook-id`, `webhook-timestamp`, `webhook-signature`:
 * HMAC-SHA256 under a `whsec_` secret). Every delivery is checked by the spec's reference
 * implementation (the `standardwebhooks` package), never by code of ours. It refuses: a
 * receiver name with no secret registered (404), a body over 1 MB (413), a delivery no
 * registered secret verifies, whether a header is missing, the signature wrong (body, id or
 * timestamp tampered with) or the timestamp outside the package's tolerance (5 minutes): 400
 * `{ "error": "signature" }`, recorded as unverified. A verified delivery is answered 204, or as
 * the fault mode says.
 *
 * Receivers: `POST /webhooks/:name`, the raw body verified as received, byte for byte.
 *
 * Control API (tests): `PUT /_control/receivers/:name` with `{ "secret": "whsec_..." }` or
 * `{ "secrets": [...] }` (a rotation: a delivery verifies if any of them accepts it) registers or
 * replaces a receiver's secrets; `GET /_control/deliveries?name=&type=&webhookId=` lists every
 * delivery to a registered receiver (name, webhookId, timestamp, type, body, verified,
 * answeredStatus, receivedAt), oldest first; `PATCH /_control/mode` sets how verified deliveries
 * are answered (`answer`: normal (204), error (HTTP 500), rateLimited (429 with `Retry-After:
 * retryAfterSeconds`, default 1), slow (204 after `slowMs`, unless the sender gives up first:
 * then answeredStatus is null), gone (410); `times`: only the next N deliveries, then normal
 * again, absent: until changed); `PATCH /_control/receivers/:name/mode` the same for one receiver
 * only (over the simulator's mode); `GET /_control/mode` (`times` counts down);
 * `POST /_control/reset` forgets deliveries, receivers and modes.
 */
export interface WebhookReceiverOptions {
  /** 0 or absent: a free port. */
  port?: number;
}

export interface RecordedDelivery {
  /** The receiver, as in `/webhooks/:name`. */
  name: string;
  /** The `webhook-id` header; null when absent. */
  webhookId: string | null;
  /** The `webhook-timestamp` header (Unix seconds); null when absent or not an integer. */
  timestamp: number | null;
  /** The JSON body's `type`, when a string. */
  type: string | null;
  /** The body parsed as JSON; null when it is not JSON. */
  body: unknown;
  verified: boolean;
  /** What the sender was answered; null when it gave up before the (slow) answer. */
  answeredStatus: number | null;
  receivedAt: string;
}

export interface RunningWebhookReceiver {
  url: string;
  deliveries(): RecordedDelivery[];
  /** Hears each delivery as it is recorded (benchmarks time arrivals by it). */
  onDelivery(listener: (delivery: RecordedDelivery) => void): void;
  /** Registers (or replaces) a receiver's secrets (`whsec_` + base64); throws on one that is not. */
  register(name: string, secrets: string[]): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;
const RECEIVER_PATH = /^\/webhooks\/[^/]+$/;

const Mode = z.strictObject({
  answer: z.enum(['normal', 'error', 'rateLimited', 'slow', 'gone']).optional(),
  retryAfterSeconds: z.number().int().min(0).max(86_400).optional(),
  slowMs: z.number().int().min(0).max(600_000).optional(),
  times: z.number().int().min(1).optional(),
});
type Answer = NonNullable<z.output<typeof Mode>['answer']>;
type SimulatorMode = Required<Omit<z.output<typeof Mode>, 'times'>> & { times?: number };
const DEFAULT_MODE: SimulatorMode = { answer: 'normal', retryAfterSeconds: 1, slowMs: 5_000 };

/** A verifier per secret; throws on a secret that is not `whsec_` + base64 of at least one byte. */
function verifiers(secrets: string[]): Webhook[] {
  if (secrets.length === 0) throw new Error('a receiver needs at least one secret');
  return secrets.map((secret) => {
    if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) throw new Error('a secret is whsec_ followed by base64');
    return new Webhook(secret);
  });
}

const Secret = z.string().startsWith('whsec_');
const Receiver = z
  .union([z.strictObject({ secret: Secret }), z.strictObject({ secrets: z.array(Secret).min(1).max(10) })])
  .transform((r, check) => {
    try {
      return verifiers('secret' in r ? [r.secret] : r.secrets);
    } catch (error) {
      check.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body as JSON, or null. */
function parse(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return null;
  }
}

/** The request body as received (a string of its exact bytes), or the status refusing it. */
async function readRaw(ctx: Context): Promise<string | number> {
  try {
    return await getRawBody(ctx.req, {
      limit: MAX_BODY_BYTES,
      length: ctx.get('content-length') || undefined,
      encoding: 'utf8',
    });
  } catch (error) {
    return (error as { status?: number }).status === 413 ? 413 : 400;
  }
}

export async function startWebhookReceiver(options: WebhookReceiverOptions = {}): Promise<RunningWebhookReceiver> {
  const timers = new SimulatorTimers();
  let deliveries: RecordedDelivery[] = [];
  const receivers = new Map<string, Webhook[]>();
  const listeners: ((delivery: RecordedDelivery) => void)[] = [];
  /** A receiver's own fault mode, over the simulator's (tests sharing one receiver do not meet each other's). */
  const receiverModes = new Map<string, SimulatorMode>();
  /** Slow answers being held: released on reset, so no sender waits on a forgotten mode. */
  const held = new Set<() => void>();
  const control = controlRouter();
  const modes = faultModes<SimulatorMode>(
    control,
    Mode,
    DEFAULT_MODE,
    () => {
      for (const release of held) release();
      held.clear();
      timers.clear();
      deliveries = [];
      receivers.clear();
      receiverModes.clear();
    },
    (patch) => {
      // A new answer without a count holds until changed; normal has nothing to count.
      if ((patch.answer !== undefined && patch.times === undefined) || modes.current.answer === 'normal')
        delete modes.current.times;
    },
  );

  /**
   * The answer for the next verified delivery, counting down `times` in the live mode (the
   * object GET /mode shows), back to normal when it runs out.
   */
  function nextAnswer(name: string): SimulatorMode {
    const mode = receiverModes.get(name) ?? modes.current;
    const answering = { ...mode };
    if (mode.answer !== 'normal' && mode.times !== undefined) {
      mode.times -= 1;
      if (mode.times <= 0) {
        mode.answer = 'normal';
        delete mode.times;
        receiverModes.delete(name);
      }
    }
    return answering;
  }

  async function answer(ctx: Context, delivery: RecordedDelivery, mode: SimulatorMode): Promise<void> {
    const statuses: Record<Answer, number> = { normal: 204, error: 500, rateLimited: 429, slow: 204, gone: 410 };
    const status = statuses[mode.answer];
    if (mode.answer === 'slow') {
      let gaveUp = false;
      let release = () => {};
      await timers.hold(mode.slowMs, (cancel) => {
        release = cancel;
        held.add(cancel);
        // The response's close, not the request's (that one comes as soon as the body is read).
        ctx.res.once('close', () => {
          gaveUp = true;
          cancel();
        });
      });
      held.delete(release);
      if (gaveUp) return;
    }
    if (mode.answer === 'rateLimited') ctx.set('Retry-After', String(mode.retryAfterSeconds));
    ctx.status = status;
    if (status !== 204) ctx.body = { error: mode.answer };
    delivery.answeredStatus = status;
  }

  const api = new Router();
  api.post('/webhooks/:name', async (ctx) => {
    const name = ctx.params.name!;
    const secrets = receivers.get(name);
    if (!secrets) {
      ctx.status = 404;
      ctx.body = { error: 'unknown receiver' };
      return;
    }
    const raw = await readRaw(ctx);
    if (typeof raw === 'number') {
      ctx.status = raw;
      ctx.body = { error: raw === 413 ? 'too large' : 'body' };
      return;
    }
    const headers = {
      'webhook-id': ctx.get('webhook-id'),
      'webhook-timestamp': ctx.get('webhook-timestamp'),
      'webhook-signature': ctx.get('webhook-signature'),
    };
    // Any one secret of a rotation will do; the package throws on every refusal.
    const verified = secrets.some((webhook) => {
      try {
        webhook.verify(raw, headers, { jsonParse: false });
        return true;
      } catch {
        return false;
      }
    });
    const body = parse(raw);
    const delivery: RecordedDelivery = {
      name,
      webhookId: headers['webhook-id'] || null,
      timestamp: /^\d+$/.test(headers['webhook-timestamp']) ? Number(headers['webhook-timestamp']) : null,
      type: isObject(body) && typeof body.type === 'string' ? body.type : null,
      body,
      verified,
      answeredStatus: verified ? null : 400,
      receivedAt: new Date().toISOString(),
    };
    deliveries.push(delivery);
    for (const listener of listeners) listener(delivery);
    if (!verified) {
      ctx.status = 400;
      ctx.body = { error: 'signature' };
      return;
    }
    await answer(ctx, delivery, nextAnswer(name));
  });

  receiverControl(control, receivers, receiverModes, () => deliveries);

  /** JSON for the control API; the receivers read their bodies raw, as sent. */
  const json = bodyParser({ enableTypes: ['json'] });
  const parseBodies: Middleware = (ctx, next) => (RECEIVER_PATH.test(ctx.path) ? next() : json(ctx, next));

  const server = await startSimulatorServer({
    port: options.port,
    timers,
    before: [],
    bodyParser: parseBodies,
    control,
    api,
  });
  return {
    url: server.url,
    deliveries: () => deliveries.map((d) => ({ ...d })),
    onDelivery: (listener) => void listeners.push(listener),
    register: (name, secrets) => void receivers.set(name, verifiers(secrets)),
    close: () => server.close(),
  };
}

/** The control routes that register receivers, set one receiver's mode, and list what arrived. */
function receiverControl(
  control: ReturnType<typeof controlRouter>,
  receivers: Map<string, Webhook[]>,
  receiverModes: Map<string, SimulatorMode>,
  deliveries: () => RecordedDelivery[],
): void {
  control.put('/receivers/:name', (ctx) => {
    const parsed = Receiver.safeParse(ctx.request.body);
    if (!parsed.success) {
      ctx.status = 400;
      ctx.body = { message: parsed.error.message };
      return;
    }
    receivers.set(ctx.params.name!, parsed.data);
    ctx.status = 204;
  });
  control.patch('/receivers/:name/mode', (ctx) => {
    const parsed = Mode.safeParse(ctx.request.body);
    if (!parsed.success) {
      ctx.status = 400;
      ctx.body = { message: parsed.error.message };
      return;
    }
    const name = ctx.params.name!;
    const mode: SimulatorMode = { ...DEFAULT_MODE, ...receiverModes.get(name), ...parsed.data };
    if (parsed.data.times === undefined) delete mode.times;
    if (mode.answer === 'normal') receiverModes.delete(name);
    else receiverModes.set(name, mode);
    ctx.body = mode;
  });
  control.get('/deliveries', (ctx) => {
    const wanted = (key: string) => {
      const value = ctx.query[key];
      return typeof value === 'string' ? value : undefined;
    };
    const [name, type, webhookId] = [wanted('name'), wanted('type'), wanted('webhookId')];
    ctx.body = deliveries().filter(
      (d) =>
        (name === undefined || d.name === name) &&
        (type === undefined || d.type === type) &&
        (webhookId === undefined || d.webhookId === webhookId),
    );
  });
}

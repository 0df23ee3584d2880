import { randomBytes } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { controlRouter, faultModes, SimulatorTimers, startSimulatorServer } from './server';
import {
  type EmailEvent,
  MAIL_SEND_PATH,
  MAX_MESSAGE_BYTES,
  Refusal,
  type SendGridErrorItem,
} from '../providers/email/protocol';

/**
 * The e-mail provider simulator (SendGrid's v3 Mail Send API, see protocol.ts), refusing what
 * SendGrid refuses: a missing or wrong `Authorization: Bearer` key (401), a body that is not
 * `application/json` (415) or not JSON at all (400), a request whose personalizations, to
 * addresses, from, subject or content are missing or malformed (400, every error naming its
 * field, all at once), text/html before text/plain (400), a from address that is not a verified
 * sender (403), a body over the size limit (413).
 *
 * Control API (tests): `GET /_control/messages?to=` lists what was accepted (to, from, subject,
 * text, html, messageId, sentAt: the link a test reads), `PATCH /_control/mode` makes sends fail
 * (`send`: normal, error (HTTP 500), timeout (no answer until the client gives up), rateLimited
 * (429 with X-RateLimit-* headers)) and sets the Event Webhook (`deliveryEventsUrl`, `delivery`:
 * delivered, bounce, blocked, dropped or none; `deliveryDelayMs`); `POST /_control/reset`.
 */
export interface EmailSimulatorOptions {
  apiKey: string;
  /**
   * Verified single senders (addresses), and authenticated domains written `@example.com`; any
   * other from address is refused (403).
   */
  verifiedSenders: string[];
  port?: number;
  /** The size limit on a request body (SendGrid's: 30 MB); smaller in tests of the 413. */
  maxPayloadBytes?: number;
}

export interface SentEmail {
  messageId: string;
  to: string;
  toName?: string;
  from: string;
  fromName?: string;
  subject: string;
  text?: string;
  html?: string;
  sentAt: string;
  /** The last delivery event posted for it. */
  delivery?: string;
}

const Mode = z.strictObject({
  send: z.enum(['normal', 'error', 'timeout', 'rateLimited']).optional(),
  delivery: z.enum(['delivered', 'bounce', 'blocked', 'dropped', 'none']).optional(),
  deliveryDelayMs: z.number().int().min(0).max(600_000).optional(),
  deliveryEventsUrl: z.url().nullable().optional(),
});
type SimulatorMode = Required<Omit<z.output<typeof Mode>, 'deliveryEventsUrl'>> & { deliveryEventsUrl: string | null };
const DEFAULT_MODE: SimulatorMode = {
  send: 'normal',
  delivery: 'delivered',
  deliveryDelayMs: 50,
  deliveryEventsUrl: null,
};

/** An address SendGrid would take: a local part, an @, a domain with a dot; no spaces or brackets. */
const ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:".]{2,}$/;
const RATE_LIMIT = 600;

const text = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface RunningEmailSimulator {
  url: string;
  sent(): SentEmail[];
  close(): Promise<void>;
}

/** The refusals of a mail send body, in SendGrid's words, each naming its field. */
function validate(body: unknown): SendGridErrorItem[] {
  const errors: SendGridErrorItem[] = [];
  const refuse = (field: string | null, message: string) => errors.push({ message, field, help: null });
  if (!isObject(body)) {
    refuse(null, Refusal.badRequest);
    return errors;
  }
  const personalizations = body.personalizations;
  if (!Array.isArray(personalizations) || personalizations.length === 0)
    refuse('personalizations', Refusal.personalizationsRequired);
  else
    personalizations.forEach((p: unknown, i) => {
      const to = isObject(p) ? p.to : undefined;
      if (!Array.isArray(to) || to.length === 0) return refuse(`personalizations.${i}.to`, Refusal.toRequired);
      to.forEach((address: unknown, j) => {
        if (!isObject(address) || typeof address.email !== 'string' || !ADDRESS.test(address.email))
          refuse(`personalizations.${i}.to.${j}.email`, Refusal.invalidAddress);
      });
    });
  const from = body.from;
  if (!isObject(from) || !text(from.email)) refuse('from.email', Refusal.fromRequired);
  else if (!ADDRESS.test(from.email)) refuse('from.email', Refusal.invalidFrom);
  const everyHasSubject =
    Array.isArray(personalizations) &&
    personalizations.length > 0 &&
    personalizations.every((p: unknown) => isObject(p) && text(p.subject));
  if (!text(body.subject) && !everyHasSubject) refuse('subject', Refusal.subjectRequired);
  const content = body.content;
  if (!Array.isArray(content) || content.length === 0) refuse('content', Refusal.contentRequired);
  else {
    content.forEach((block: unknown, i) => {
      if (!isObject(block) || !text(block.type)) refuse(`content.${i}.type`, Refusal.contentType);
      if (!isObject(block) || !text(block.value)) refuse(`content.${i}.value`, Refusal.contentValue);
    });
    const types = content.map((block: unknown) => (isObject(block) ? block.type : undefined));
    const plain = types.indexOf('text/plain');
    const html = types.indexOf('text/html');
    if (plain >= 0 && html >= 0 && html < plain) refuse('content', Refusal.contentOrder);
  }
  return errors;
}

export async function startEmailSimulator(options: EmailSimulatorOptions): Promise<RunningEmailSimulator> {
  const timers = new SimulatorTimers();
  let messages: SentEmail[] = [];
  const control = controlRouter();
  const modes = faultModes<SimulatorMode>(control, Mode, DEFAULT_MODE, () => {
    timers.clear();
    messages = [];
  });
  const senders = options.verifiedSenders.map((s) => s.toLowerCase());
  const verified = (address: string) => {
    const lower = address.toLowerCase();
    return senders.includes(lower) || senders.includes(lower.slice(lower.indexOf('@')));
  };

  /** SendGrid's error envelope. */
  const refuse = (ctx: Context, status: number, errors: SendGridErrorItem[]) => {
    ctx.status = status;
    ctx.body = { errors };
  };
  const refuseOne = (ctx: Context, status: number, message: string, field: string | null = null) =>
    refuse(ctx, status, [{ message, field, help: null }]);

  function deliver(email: SentEmail) {
    const url = modes.current.deliveryEventsUrl;
    if (!url || modes.current.delivery === 'none') return;
    const outcome = modes.current.delivery;
    timers.later(modes.current.deliveryDelayMs, async () => {
      email.delivery = outcome === 'blocked' ? 'bounce' : outcome;
      const sgMessageId = `${email.messageId}.recvd-simulator-1-${randomBytes(4).toString('hex').toUpperCase()}-0.0`;
      const timestamp = Math.floor(Date.now() / 1000);
      const base = {
        email: email.to,
        timestamp,
        'smtp-id': `<${email.messageId}@ismtpd-simulator>`,
        sg_message_id: sgMessageId,
      };
      const event = (fields: Partial<EmailEvent> & Pick<EmailEvent, 'event'>): EmailEvent => ({
        ...base,
        sg_event_id: randomBytes(16).toString('base64url'),
        ...fields,
      });
      const last: Record<typeof outcome, EmailEvent> = {
        delivered: event({ event: 'delivered', response: '250 OK' }),
        bounce: event({
          event: 'bounce',
          type: 'bounce',
          status: '5.1.1',
          reason: '550 5.1.1 The email account that you tried to reach does not exist.',
        }),
        blocked: event({
          event: 'bounce',
          type: 'blocked',
          status: '5.7.1',
          reason: '550 5.7.1 Message rejected due to local policy',
        }),
        dropped: event({ event: 'dropped', reason: 'Bounced Address' }),
      };
      // A dropped message is never processed; the others are, then delivered or bounced.
      const events = outcome === 'dropped' ? [last.dropped] : [event({ event: 'processed' }), last[outcome]];
      await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(events),
      });
    });
  }

  /** Every refusal in SendGrid's envelope: unreadable JSON, too large a body, unknown paths. */
  const envelope: Middleware = async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) refuseOne(ctx, 404, 'Not Found');
    } catch (error) {
      const status = (error as { status?: number }).status ?? 500;
      if (status === 413) refuseOne(ctx, 413, Refusal.payloadTooLarge);
      else if (status >= 400 && status < 500) refuseOne(ctx, 400, Refusal.badRequest);
      else refuseOne(ctx, 500, Refusal.serverError);
    }
  };
  /** The key before anything else (the body is not even read without it), then the media type. */
  const authorize: Middleware = async (ctx, next) => {
    if (ctx.path !== MAIL_SEND_PATH) return next();
    const key = /^Bearer (.+)$/i.exec(ctx.get('authorization'))?.[1];
    if (key !== options.apiKey) return refuseOne(ctx, 401, Refusal.unauthorized);
    if (ctx.method === 'POST' && !ctx.is('application/json')) return refuseOne(ctx, 415, Refusal.unsupportedMediaType);
    await next();
  };

  const api = new Router();
  api.post(MAIL_SEND_PATH, async (ctx) => {
    if (modes.current.send === 'rateLimited') {
      ctx.set('X-RateLimit-Limit', String(RATE_LIMIT));
      ctx.set('X-RateLimit-Remaining', '0');
      ctx.set('X-RateLimit-Reset', String(Math.floor(Date.now() / 1000) + 60));
      return refuseOne(ctx, 429, Refusal.tooManyRequests);
    }
    if (modes.current.send === 'error') return refuseOne(ctx, 500, Refusal.serverError);
    if (modes.current.send === 'timeout') {
      await timers.hold(60_000, (cancel) => ctx.req.once('close', cancel));
      return refuseOne(ctx, 504, 'Gateway Timeout');
    }
    const body = ctx.request.body as Record<string, unknown> | undefined;
    const errors = validate(body);
    if (errors.length > 0) return refuse(ctx, 400, errors);
    const request = body as {
      personalizations: { to: { email: string; name?: string }[]; subject?: string }[];
      from: { email: string; name?: string };
      subject?: string;
      content: { type: string; value: string }[];
    };
    if (!verified(request.from.email)) return refuseOne(ctx, 403, Refusal.unverifiedSender, 'from');
    const messageId = randomBytes(16).toString('base64url');
    const sentAt = new Date().toISOString();
    const plain = request.content.find((c) => c.type === 'text/plain')?.value;
    const html = request.content.find((c) => c.type === 'text/html')?.value;
    // One message id per request, one message per recipient (as SendGrid's events show it).
    for (const personalization of request.personalizations)
      for (const to of personalization.to) {
        const email: SentEmail = {
          messageId,
          to: to.email,
          ...(to.name && { toName: to.name }),
          from: request.from.email,
          ...(request.from.name && { fromName: request.from.name }),
          subject: (personalization.subject || request.subject)!,
          ...(plain !== undefined && { text: plain }),
          ...(html !== undefined && { html }),
          sentAt,
        };
        messages.push(email);
        deliver(email);
      }
    ctx.set('X-Message-Id', messageId);
    ctx.status = 202;
    // An empty body (null would turn the status into 204).
    ctx.body = '';
  });

  control.get('/messages', (ctx) => {
    const to = typeof ctx.query.to === 'string' ? ctx.query.to.toLowerCase() : undefined;
    ctx.body = messages.filter((m) => to === undefined || m.to.toLowerCase() === to);
  });

  const server = await startSimulatorServer({
    port: options.port,
    timers,
    before: [envelope, authorize],
    bodyParser: bodyParser({ enableTypes: ['json'], jsonLimit: options.maxPayloadBytes ?? MAX_MESSAGE_BYTES }),
    control,
    api,
  });
  return { url: server.url, sent: () => [...messages], close: () => server.close() };
}

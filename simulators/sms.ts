import { randomBytes } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { callbackChaos, ChaosSettings, withWrongToken } from './chaos';
import { controlRouter, faultModes, SimulatorTimers, startSimulatorServer } from './server';
import {
  type DeliveryReport,
  type DeliveryStatus,
  isFinalDelivery,
  type SendRecipient,
} from '../providers/sms/protocol';

/**
 * The SMS gateway simulator (Africa's Talking's messaging API, see protocol.ts), refusing what the
 * gateway refuses: a wrong `apiKey` or `username` (401), a body that is not form-encoded or lacks
 * `to` or `message` (400), an `Accept` other than JSON (406: the gateway would answer XML, which
 * our client does not read), a sender id it does not know (402 InvalidSenderId per recipient), a
 * number that is not in international format (403 InvalidPhoneNumber per recipient).
 *
 * Control API (tests): `GET /_control/messages?to=` lists what was sent (the OTP or link a test
 * reads), `PATCH /_control/mode` makes sends fail (`send`: normal, error (HTTP 500), timeout (no
 * answer until the client gives up), balance (405 InsufficientBalance), gateway (501 GatewayError))
 * and sets delivery reports (`deliveryReportUrl`, `delivery`: Success, Failed, Rejected,
 * AbsentSubscriber, Expired or none; `deliveryDelayMs`; `interimReports`: a Submitted report
 * before the final one, as the gateway sends while a text is on its way; `chaos`: each report
 * delivered as a seeded plan says, see ../simulator-chaos.ts, its record at `GET
 * /_control/chaos`); `POST /_control/reset`.
 */
export interface SmsSimulatorOptions {
  username: string;
  apiKey: string;
  /** Registered sender ids and shortcodes; any other `from` is refused. */
  senderIds: string[];
  port?: number;
}

export interface SentSms {
  messageId: string;
  to: string;
  from?: string;
  message: string;
  sentAt: string;
  delivery?: string;
}

const Mode = z.strictObject({
  send: z.enum(['normal', 'error', 'timeout', 'balance', 'gateway']).optional(),
  delivery: z.enum(['Success', 'Failed', 'Rejected', 'AbsentSubscriber', 'Expired', 'none']).optional(),
  deliveryDelayMs: z.number().int().min(0).max(600_000).optional(),
  deliveryReportUrl: z.url().nullable().optional(),
  interimReports: z.boolean().optional(),
  chaos: ChaosSettings.nullable().optional(),
});
type SimulatorMode = Required<Omit<z.output<typeof Mode>, 'deliveryReportUrl'>> & { deliveryReportUrl: string | null };
const DEFAULT_MODE: SimulatorMode = {
  send: 'normal',
  delivery: 'Success',
  deliveryDelayMs: 50,
  deliveryReportUrl: null,
  interimReports: false,
  chaos: null,
};

/** International format: a plus, a country code and subscriber digits. */
const INTERNATIONAL = /^\+[1-9]\d{7,14}$/;
const COST = 'KES 0.8000';
const FAILURE_REASONS: Record<string, string> = { Failed: 'DeliveryFailure', Rejected: 'UserIsInactive' };

export interface RunningSmsSimulator {
  url: string;
  sent(): SentSms[];
  close(): Promise<void>;
}

export async function startSmsSimulator(options: SmsSimulatorOptions): Promise<RunningSmsSimulator> {
  const timers = new SimulatorTimers();
  const chaos = callbackChaos(timers);
  let messages: SentSms[] = [];
  const control = controlRouter();
  const modes = faultModes<SimulatorMode>(
    control,
    Mode,
    DEFAULT_MODE,
    () => {
      timers.clear();
      messages = [];
      chaos.configure(null);
    },
    (patch) => {
      // Chaos settings given (again) start a new plan and record; null turns it off.
      if (patch.chaos !== undefined) chaos.configure(patch.chaos);
    },
  );
  control.get('/chaos', (ctx) => {
    ctx.body = chaos.records();
  });

  const text = (ctx: Context, status: number, body: string) => {
    ctx.status = status;
    ctx.type = 'text/plain';
    ctx.body = body;
  };

  function deliver(sms: SentSms) {
    const url = modes.current.deliveryReportUrl;
    if (!url || modes.current.delivery === 'none') return;
    const status = modes.current.delivery;
    const interim = modes.current.interimReports;
    timers.later(modes.current.deliveryDelayMs, async () => {
      sms.delivery = status;
      if (interim) await report(url, sms, 'Submitted');
      await report(url, sms, status);
    });
  }

  /** One delivery report, as chaos mode plans it when set. */
  function report(url: string, sms: SentSms, status: DeliveryStatus) {
    const post = (to: string, fields: DeliveryReport) =>
      fetch(to, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields as unknown as Record<string, string>).toString(),
      }).then(async (response) => {
        await response.body?.cancel();
        return response.status;
      });
    const reportOf = (id: string, reported: DeliveryStatus): DeliveryReport => ({
      id,
      status: reported,
      phoneNumber: sms.to,
      networkCode: '63902',
      ...(FAILURE_REASONS[reported] && { failureReason: FAILURE_REASONS[reported] }),
    });
    const genuine = reportOf(sms.messageId, status);
    if (!chaos.settings) return post(url, genuine).catch(() => undefined);
    // The report's URL token is the gateway's only credential: without it, or for a text the
    // forger cannot name (message ids are unguessable), a forgery can say anything.
    return chaos.deliver({
      kind: isFinalDelivery(status) ? 'sms_final' : 'sms_interim',
      request: sms.messageId,
      send: () => post(url, genuine),
      forgeries: {
        wrong_token: () =>
          post(withWrongToken(url), reportOf(sms.messageId, status === 'Failed' ? 'Success' : 'Failed')),
        unknown_message: () => post(url, reportOf(`ATXid_${randomBytes(16).toString('hex')}`, 'Failed')),
      },
    });
  }

  const api = new Router();
  api.post('/version1/messaging', async (ctx) => {
    if (ctx.get('apiKey') !== options.apiKey) return text(ctx, 401, 'The supplied authentication is invalid');
    if (!ctx.is('application/x-www-form-urlencoded'))
      return text(ctx, 400, 'Request body must be application/x-www-form-urlencoded');
    const form = (ctx.request.body ?? {}) as Record<string, unknown>;
    if (form.username !== options.username) return text(ctx, 401, 'The supplied authentication is invalid');
    for (const field of ['to', 'message'])
      if (typeof form[field] !== 'string' || (form[field] as string).length === 0)
        return text(ctx, 400, `Request is missing required form field '${field}'`);
    if (!/json/i.test(ctx.get('accept'))) return text(ctx, 406, 'This simulator answers application/json only');
    if (modes.current.send === 'error') return text(ctx, 500, 'Internal Server Error');
    if (modes.current.send === 'timeout') {
      await timers.hold(60_000, (cancel) => ctx.req.once('close', cancel));
      return text(ctx, 504, 'Gateway Timeout');
    }
    const from = typeof form.from === 'string' && form.from !== '' ? form.from : undefined;
    const recipients: SendRecipient[] = (form.to as string).split(',').map((raw) => {
      const number = raw.trim();
      const refuse = (statusCode: number, status: string): SendRecipient => ({
        statusCode,
        number,
        status,
        cost: '0',
        messageId: 'None',
      });
      if (from !== undefined && !options.senderIds.includes(from)) return refuse(402, 'InvalidSenderId');
      if (!INTERNATIONAL.test(number)) return refuse(403, 'InvalidPhoneNumber');
      if (modes.current.send === 'balance') return refuse(405, 'InsufficientBalance');
      if (modes.current.send === 'gateway') return refuse(501, 'GatewayError');
      const sms: SentSms = {
        messageId: `ATXid_${randomBytes(16).toString('hex')}`,
        to: number,
        from,
        message: form.message as string,
        sentAt: new Date().toISOString(),
      };
      messages.push(sms);
      deliver(sms);
      return { statusCode: 101, number, status: 'Success', cost: COST, messageId: sms.messageId };
    });
    const sent = recipients.filter((r) => r.statusCode === 101).length;
    ctx.status = 201;
    ctx.body = {
      SMSMessageData: {
        Message: `Sent to ${sent}/${recipients.length} Total Cost: KES ${(0.8 * sent).toFixed(4)}`,
        Recipients: recipients,
      },
    };
  });

  control.get('/messages', (ctx) => {
    const to = typeof ctx.query.to === 'string' ? ctx.query.to : undefined;
    ctx.body = messages.filter((m) => to === undefined || m.to === to);
  });

  const server = await startSimulatorServer({
    port: options.port,
    timers,
    before: [],
    // The gateway reads forms; the control API JSON.
    bodyParser: bodyParser({ enableTypes: ['form', 'json'] }),
    control,
    api,
  });
  return { url: server.url, sent: () => [...messages], close: () => server.close() };
}

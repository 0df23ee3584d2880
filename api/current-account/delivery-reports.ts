import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { recordDeliveryReport } from '../../db/current-account/otp-sends';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { DELIVERY_STATUSES } from '../../providers/sms/protocol';
import type { Needs } from '../deps';
import type { HttpMetrics } from '../metrics';
import { type AnyRoute, defineRoute } from '../route';

const digest = (text: string) => createHash('sha256').update(text).digest();
const sameToken = (given: string, expected: string) => timingSafeEqual(digest(given), digest(expected));

/** A delivery report as the gateway posts it (form fields, all strings); other fields it may add are ignored. */
const DeliveryReport = z.object({
  id: z.string().min(1).max(100),
  status: z.enum(DELIVERY_STATUSES),
  phoneNumber: z.string().max(20).optional(),
  networkCode: z.string().max(10).optional(),
  failureReason: z.string().max(100).optional(),
  retryCount: z.string().max(10).optional(),
});

/**
 * The SMS gateway's delivery reports (Africa's Talking: form-encoded, unsigned, posted to the URL
 * registered with it, whose token is the credential). A report only records how a code's text
 * fared (`otp_sends.delivery_status`), for support and operators: it moves nothing and decides
 * nothing, so it needs no confirmation from the gateway. The number it carries is never stored
 * or logged.
 */
export function deliveryReportRoutes(
  deps: Needs<'db' | 'logger' | 'clock', 'SMS_CALLBACK_SOURCES' | 'SMS_CALLBACK_TOKEN'>,
  metrics: HttpMetrics,
): AnyRoute[] {
  const { db, config, logger, clock } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/current-account/callbacks/sms/delivery-reports/{token}',
      operationId: 'receiveSmsDeliveryReport',
      summary: 'SMS gateway delivery report (the gateway calls it; not for clients)',
      description:
        'Form-encoded as Africa’s Talking posts it: id (the messageId), status (Sent, Submitted, Buffered, Success, ' +
        'Failed, Rejected, AbsentSubscriber, Expired), phoneNumber, networkCode, failureReason. The token in the path ' +
        'is SMS_CALLBACK_TOKEN. Answered 200 for a report of a text we did not send too (nothing recorded).',
      tags: ['current account'],
      extension: true,
      bodyFormat: 'form',
      callback: { provider: 'sms', sources: config.SMS_CALLBACK_SOURCES },
      request: { params: z.object({ token: z.string().max(200) }), body: DeliveryReport },
      responses: { 200: { description: 'Received', schema: z.object({ received: z.literal(true) }) } },
      errors: { NOT_FOUND: 'not the registered delivery-report address' },
      async handler(ctx, { params, body }) {
        if (!config.SMS_CALLBACK_TOKEN || !sameToken(params.token, config.SMS_CALLBACK_TOKEN)) {
          metrics.callbackRefused('sms', 'token');
          logger.warn({ source: ctx.ip }, 'SMS delivery report to an unknown address refused');
          throw new ServiceError(ErrorCode.NOT_FOUND, 'No such callback address');
        }
        const recorded = await recordDeliveryReport(
          db,
          { messageId: body.id, status: body.status, failureReason: body.failureReason },
          clock.now(),
        );
        if (!recorded) logger.warn({ message_id: body.id }, 'SMS delivery report for no text of ours');
        ctx.body = { received: true };
      },
    }),
  ];
}

import { z } from 'zod';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import type { AppDeps } from '../deps';
import type { KycWorkflows } from '../kyc-workflows';
import { type AnyRoute, defineRoute } from '../route';

const Received = z.object({ received: z.boolean() }).meta({ id: 'CallbackReceived' });

/**
 * The provider's result callbacks, one route per API generation. Authenticated by the
 * provider's signature (constant-time, within the timestamp window), recorded raw once per
 * event, then handed to the application's verification run, which confirms any final verdict
 * with a signed status lookup: the signature does not cover a v2 body.
 */
export function kycCallbackRoutes(deps: AppDeps, workflows: KycWorkflows): AnyRoute[] {
  const { db, providers, logger } = deps;
  const route = (version: ProviderApiVersion) =>
    defineRoute({
      method: 'post',
      path: `/v1/kyc/provider-callbacks/${version}`,
      operationId: `receiveKycCallback${version.toUpperCase()}`,
      summary: `Identity-verification provider result callback (API ${version})`,
      description:
        version === 'v2'
          ? 'Signed in the body (signature, timestamp). Not for clients.'
          : 'Signed in the SmileID-Timestamp and SmileID-Request-Signature headers. Not for clients.',
      tags: ['kyc'],
      extension: true,
      // The provider is not a client to throttle: an unsigned flood is refused by the signature check.
      rateLimit: false,
      request: { body: z.record(z.string(), z.unknown()) },
      responses: { 200: { description: 'Received (duplicates too)', schema: Received } },
      async handler(ctx) {
        const raw = (ctx.request as { rawBody?: string }).rawBody ?? '';
        const event = providers.kyc.parseCallback(version, ctx.headers, raw);
        if (!event) throw new ServiceError(ErrorCode.UNAUTHORISED, 'Callback signature or timestamp refused');
        const application = event.jobId
          ? await db('kyc_applications').where({ job_id: event.jobId }).first<{ id: string; organization_id: string } | undefined>()
          : undefined;
        const inserted = await db('kyc_callback_events')
          .insert({ api_version: version, event_id: event.eventId, application_id: application?.id ?? null, raw_body: raw })
          .onConflict('event_id')
          .ignore()
          .returning('id');
        if (inserted.length > 0 && application) {
          const delivered = await workflows.deliverCallback(application.id, {
            eventId: event.eventId,
            resultCode: event.resultCode,
            resultText: event.resultText,
            isFinal: event.isFinal,
            providerJobId: event.providerJobId,
          });
          if (!delivered) logger.info({ application_id: application.id, event_id: event.eventId }, 'late KYC callback recorded; no verification running');
        }
        ctx.body = { received: true };
      },
    });
  return [route('v2'), route('v3')];
}

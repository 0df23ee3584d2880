import { createHash } from 'node:crypto';
import { z } from 'zod';
import { forgetKycCallbackEvent, storeKycCallbackEvent } from '../../db/kyc/callbacks';
import { findApplicationByJobId } from '../../db/kyc/applications';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import type { Needs } from '../deps';
import type { KycWorkflows } from './workflows';
import type { HttpMetrics } from '../metrics';
import { type AnyRoute, defineRoute } from '../route';

const Received = z.object({ received: z.boolean() }).meta({ id: 'CallbackReceived' });

/**
 * The provider's result callbacks, one route per API generation. Authenticated by the
 * provider's signature (constant-time, within the timestamp window), then only a trigger: the
 * application's verification run asks the provider (a signed lookup) and records only what the
 * lookup says, never the callback's verdict, review flag or job id. A signature (v2 in the body,
 * v3 in headers) covers only the timestamp and partner id, so any recent pair fits any body: a
 * v3 job id may only steer the lookup, whose answer must name the application's own user. An
 * event is stored once (its id), up to
 * CALLBACKS_STORED_PER_RESOURCE per application; one naming no application of ours is counted
 * and logged, never stored.
 */
export function kycCallbackRoutes(
  deps: Needs<
    'db' | 'providers' | 'logger',
    'CALLBACKS_STORED_PER_RESOURCE' | 'KYC_CALLBACK_BODY_LIMIT' | 'KYC_CALLBACK_SOURCES'
  >,
  workflows: KycWorkflows,
  metrics: HttpMetrics,
): AnyRoute[] {
  const { db, providers, logger, config } = deps;
  const route = (version: ProviderApiVersion) =>
    defineRoute({
      method: 'post',
      path: `/v1/kyc/provider-callbacks/${version}`,
      operationId: `receiveKycCallback${version.toUpperCase()}`,
      summary: `Identity-verification provider result callback (API ${version})`,
      description:
        version === 'v2'
          ? 'Signed in the body (signature, timestamp). Not for clients.'
          : 'Signed in the Response-Signature and Response-Timestamp headers; the job in SmileID-Job-ID. Not for clients.',
      tags: ['kyc'],
      extension: true,
      // Result callbacks reach 1.5 MB (protocols/kyc-provider.md).
      callback: { provider: 'kyc', sources: config.KYC_CALLBACK_SOURCES, bodyLimit: config.KYC_CALLBACK_BODY_LIMIT },
      request: { body: z.record(z.string(), z.unknown()) },
      responses: {
        200: { description: 'Received (duplicates and ones for no application of ours too)', schema: Received },
      },
      errors: { UNAUTHORISED: 'the signature or its timestamp is refused (counted and logged, not stored)' },
      async handler(ctx) {
        const raw = ctx.request.rawBody ?? '';
        const event = providers.kyc.parseCallback(version, ctx.headers, raw);
        if (!event) {
          metrics.callbackRefused('kyc', 'signature');
          logger.warn({ api_version: version, source: ctx.ip, bytes: raw.length }, 'KYC callback signature refused');
          throw new ServiceError(ErrorCode.UNAUTHORISED, 'Callback signature or timestamp refused', [], {
            'WWW-Authenticate': 'SmileID-Signature',
          });
        }
        ctx.body = { received: true };
        const application = event.jobId ? await findApplicationByJobId(db, event.jobId) : undefined;
        if (!application) {
          metrics.callbackRefused('kyc', 'unknown_job');
          logger.warn({ api_version: version, source: ctx.ip }, 'KYC callback for no application of ours; not stored');
          return;
        }
        // Event ids are built from the body: scoped to the application it was matched to (a
        // forged event naming another job cannot take that job's id), and a long one kept by its
        // digest (it is an index key).
        const scoped = `${application.id}:${event.eventId}`;
        const eventId = scoped.length <= 200 ? scoped : `sha256:${createHash('sha256').update(scoped).digest('hex')}`;
        const stored = await storeKycCallbackEvent(db, config.CALLBACKS_STORED_PER_RESOURCE, {
          apiVersion: version,
          eventId,
          applicationId: application.id,
          raw,
        });
        if (stored === 'duplicate') return;
        if (stored === 'over_cap') {
          // Enough events for this application are stored: its run's own lookups settle it from here.
          metrics.callbackRefused('kyc', 'over_cap');
          logger.warn(
            { application_id: application.id, api_version: version },
            'KYC callback not stored: the application has its share of stored callbacks',
          );
          return;
        }
        const delivered = await workflows
          .deliverCallback(application.id, {
            eventId,
            providerJobId: version === 'v3' ? event.providerJobId : undefined,
            isFinal: true,
          })
          .catch(async (error: unknown) => {
            // Temporal could not take it: forgotten, so the provider's retry is a new event (500).
            await forgetKycCallbackEvent(db, eventId);
            throw error;
          });
        if (!delivered)
          logger.info(
            { application_id: application.id, event_id: eventId },
            'late KYC callback recorded; no verification running',
          );
      },
    });
  return [route('v2'), route('v3')];
}

import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import { documentDigest, keepDocumentDigest, settleDocument } from '../../db/financing/documents';
import { findExtractionJob, recordExtraction } from '../../db/financing/invoices';
import type { ExtractionOutcome } from '../../domain/financing/invoice-extraction';
import { storedDocumentProblem } from '../../domain/financing/content';
import { documentKey } from '../../domain/financing/keys';
import { type AnalysisOutcome, ExtractionError } from '../../providers/extraction/protocol';
import { ExtractionFailure, type ExtractionJob, type UploadFound } from '../../workflows/financing/messages';
import type { Needs } from '../deps';

/** Our own credentials or configuration refused (a key being rotated, a model not served): a service fault, retried. */
const SERVICE_FAULTS = new Set([401, 403, 404]);

/**
 * A provider error as the step's failure: transient ones, and refusals of our own credentials
 * or configuration, are thrown as they are (retried until the run's deadline, visible to an
 * operator meanwhile, then "unavailable" to the merchant); a refusal of the document ends the
 * extraction with its reason; a result the provider no longer has (404 on reading) too. Messages
 * carry neither the key nor the document's URL (the client redacts them).
 */
function stepFailure(error: unknown, step: 'analyze' | 'read'): unknown {
  if (!(error instanceof ExtractionError) || error.details.transient) return error;
  const status = error.details.httpStatus ?? 0;
  if (step === 'read' && status === 404)
    return ApplicationFailure.nonRetryable(
      'The extraction provider no longer has the analysis',
      ExtractionFailure.RESULT_GONE,
    );
  if (SERVICE_FAULTS.has(status)) return error;
  return ApplicationFailure.nonRetryable(error.message, ExtractionFailure.REFUSED);
}

/** The provider fetches the document at once; the URL need not outlive a few minutes. */
const READ_URL_SECONDS = 300;
/** Why a document whose kept copy differs from the one recorded is not extracted. */
const CHANGED = 'The stored document is not the one registered: its SHA-256 differs from the one recorded';
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A store's Last-Modified is believed only within this much of our clock. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Invoice extraction's steps: the invoice's job, the document in the store (kept as our own copy
 * once found), the provider's analysis (it fetches that copy through a presigned GET URL that
 * never leaves this step), and the outcome recorded.
 */
export function createFinancingActivities({
  db,
  providers,
  clock,
  logger,
}: Needs<'db' | 'providers' | 'clock' | 'logger'>) {
  const extraction = () => {
    if (!providers.extraction)
      throw ApplicationFailure.nonRetryable(
        'The invoice-extraction provider is not configured',
        ExtractionFailure.NOT_CONFIGURED,
      );
    return providers.extraction;
  };
  return {
    /** The invoice's current extraction and its document; undefined if there is no such invoice. */
    async beginExtraction(input: { organizationId: string; invoiceId: string }): Promise<ExtractionJob | undefined> {
      const job = await findExtractionJob(db, input.organizationId, input.invoiceId);
      return (
        job && {
          status: job.status,
          extraction: job.extraction,
          documentId: job.document_id,
          objectKey: job.object_key,
          contentType: job.content_type,
          sizeBytes: Number(job.size_bytes),
          uploadExpiresAtMs: job.upload_expires_at.getTime(),
        }
      );
    },

    /**
     * Whether the document is in the store as presigned (then it is UPLOADED), missing, or something
     * else: another size or content type, or first bytes that are not the declared type's signature,
     * which ends the extraction FAILED before the provider sees it.
     *
     * The first time it is found, the service keeps its own copy (domain/financing/keys): the upload
     * is read whole (one ranged GET of at most its declared size), checked, and those very bytes are
     * written create-only at the document key, which no URL can write; then the upload is deleted.
     * From then on (a retry, a re-extraction) only that copy is read: a second PUT to the upload URL
     * cannot change what is checked or what the provider reads. The copy's SHA-256 is recorded the
     * first time and checked on every read after: a copy that differs (written by anything holding
     * the store's own credentials) ends the extraction FAILED, DOCUMENT_CHANGED, unanalysed.
     */
    async findUpload(input: {
      organizationId: string;
      documentId: string;
      objectKey: string;
      contentType: string;
      sizeBytes: number;
    }): Promise<UploadFound> {
      const { storage } = providers;
      const declared = { contentType: input.contentType, sizeBytes: input.sizeBytes };
      const key = documentKey(input.objectKey);
      let object = await storage.readStart(key, input.sizeBytes);
      if (!object && key !== input.objectKey) {
        const upload = await storage.readStart(input.objectKey, input.sizeBytes);
        if (!upload) return { status: 'MISSING' };
        const problem = storedDocumentProblem(declared, upload);
        if (problem) return { status: 'MISMATCH', reason: problem };
        // Stored by an earlier attempt meanwhile: that copy stays, and is what is checked below.
        const stored = await storage.storeOnce({ key, body: upload.head, contentType: input.contentType });
        object = stored ? upload : await storage.readStart(key, input.sizeBytes);
      }
      if (!object) return { status: 'MISSING' };
      const problem = storedDocumentProblem(declared, object);
      if (problem) return { status: 'MISMATCH', reason: problem };
      const digest = sha256(object.head);
      const recorded = await keepDocumentDigest(db, input.organizationId, input.documentId, digest);
      if (recorded !== digest) {
        logger.error(
          { document_id: input.documentId },
          'kept copy of a financing document differs from the one recorded',
        );
        return { status: 'MISMATCH', reason: CHANGED };
      }
      if (key !== input.objectKey)
        await storage.remove(input.objectKey).catch((error: unknown) =>
          // Left behind, it is never read again (the bucket's lifecycle rule on uploads/ removes it).
          logger.warn({ err: error, document_id: input.documentId }, 'uploaded copy of a stored document not removed'),
        );
      const now = clock.now();
      const written = object.lastModified?.getTime();
      // The store's word on when, if it is a time at all and not in our future.
      const uploadedAt =
        written !== undefined && Number.isFinite(written) && written <= now.getTime() + CLOCK_SKEW_MS
          ? new Date(Math.min(written, now.getTime()))
          : now;
      await settleDocument(db, input.organizationId, input.documentId, { status: 'UPLOADED', uploadedAt });
      return { status: 'PRESENT' };
    },

    /**
     * Submits the document for analysis (our copy of it, kept by findUpload: objectKey is its upload
     * key); answers the provider's result id. Given the document (runs since the digest patch), the
     * copy is read and checked against its recorded SHA-256 first, just before the provider is
     * handed a URL to it.
     */
    async analyzeInvoice(input: {
      objectKey: string;
      document?: { organizationId: string; documentId: string; sizeBytes: number };
    }): Promise<{ resultId: string }> {
      const client = extraction();
      const key = documentKey(input.objectKey);
      const { document } = input;
      if (document) {
        const copy = await providers.storage.readStart(key, document.sizeBytes);
        const digest = copy && copy.sizeBytes === document.sizeBytes ? sha256(copy.head) : undefined;
        // A store step that ran before the digests (an older worker mid-deploy) recorded none: the
        // first read records it, as the store step does for copies kept before them.
        const recorded =
          digest &&
          ((await documentDigest(db, document.organizationId, document.documentId)) ??
            (await keepDocumentDigest(db, document.organizationId, document.documentId, digest)));
        if (!digest || recorded !== digest) {
          logger.error({ document_id: document.documentId }, 'financing document not analysed: its kept copy differs');
          throw ApplicationFailure.nonRetryable(CHANGED, ExtractionFailure.DOCUMENT_CHANGED);
        }
      }
      const { url } = await providers.storage.presignGet({ key, expiresInSeconds: READ_URL_SECONDS });
      try {
        return await client.analyze({ documentUrl: url });
      } catch (error) {
        throw stepFailure(error, 'analyze');
      }
    },

    /** Reads the analysis: running (with the provider's suggested wait), or its outcome. */
    async readAnalysis(input: { resultId: string }): Promise<AnalysisOutcome> {
      try {
        return await extraction().result(input.resultId);
      } catch (error) {
        throw stepFailure(error, 'read');
      }
    },

    /**
     * Records how extraction `extraction` ended, if it is still the one asked for; a document that
     * never arrived is NEVER_UPLOADED. Answers whether it was recorded.
     */
    async recordExtraction(input: {
      organizationId: string;
      invoiceId: string;
      documentId: string;
      extraction: number;
      outcome: ExtractionOutcome;
    }): Promise<boolean> {
      return db.transaction(async (trx) => {
        const recorded = await recordExtraction(
          trx,
          input.organizationId,
          input.invoiceId,
          input.extraction,
          input.outcome,
          clock.now(),
        );
        if (recorded && input.outcome.status === 'NOT_UPLOADED')
          await settleDocument(trx, input.organizationId, input.documentId, { status: 'NEVER_UPLOADED' });
        return recorded;
      });
    },
  };
}

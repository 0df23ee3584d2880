import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { FinancingActivities } from '../../activities';

import type { ExtractionOutcome } from '../../domain/financing/invoice-extraction';
import {
  ExtractionFailure,
  type ExtractionJob,
  extractionRequestedSignal,
  type InvoiceExtractionInput,
} from './messages';

/** How long past a document's wait an unreachable store is still retried. */
const STORE_PATIENCE_MS = 60_000;
/** The least time a provider step is given, however close the deadline. */
const MIN_STEP_MS = 10_000;

/** Short database reads and writes, safe to rerun. */
const record = proxyLocalActivities<FinancingActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '30 seconds' },
});
/**
 * The store's steps: a missing document is an answer, an unreachable store is retried, until the
 * document's wait is over and a little more (then the extraction FAILS rather than wait forever).
 */
const storeSteps = (remainingMs: number) =>
  proxyActivities<FinancingActivities>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: Math.max(0, remainingMs) + STORE_PATIENCE_MS,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  });
/** The provider's steps, retried while the extraction's deadline allows (a last read gets a fair chance). */
const providerSteps = (remainingMs: number) =>
  proxyActivities<FinancingActivities>({
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: Math.max(MIN_STEP_MS, remainingMs),
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  });

/** How often the store is asked whether a registered document has arrived: doubling up to this. */
const FIRST_UPLOAD_POLL_MS = 1_000;
const MAX_UPLOAD_POLL_MS = 30_000;
/** How often a running analysis is read: the provider's Retry-After, within these bounds (1 s when it says nothing). */
const MIN_RESULT_POLL_MS = 1_000;
const MAX_RESULT_POLL_MS = 10_000;
/** The steps' failures that end an extraction at once; any other means the provider stayed unavailable. */
const FINAL = new Set<string>(Object.values(ExtractionFailure));
/** Past this, the run continues as new between extractions. */
const HISTORY_LIMIT = 10_000;
/** The analysis step checks the kept copy's SHA-256 before the provider reads it (it was not told which document it was). */
const ANALYZE_CHECKS_DIGEST = 'invoice-analyze-checks-digest';

/**
 * An invoice's extractions (`invoice-extraction/<document id>`). Started or signalled by
 * signal-with-start each time one is asked for; runs them one at a time, each with the number the
 * invoice held when it began, and records its outcome only if that number is still the one asked
 * for. One extraction: wait for the document in the store (until its upload URL expired and a
 * grace: then NOT_UPLOADED), check it is what was presigned, have the provider analyse it, read
 * the analysis until it ends or the deadline passes (FAILED), and record what it found.
 */
export async function invoiceExtraction(
  input: InvoiceExtractionInput,
): Promise<{ extraction: number; status: string }> {
  const ref = { organizationId: input.organizationId, invoiceId: input.invoiceId };
  let requested = input.requested ?? 0;
  let handled = 0;
  let status = 'NONE';
  setHandler(extractionRequestedSignal, ({ extraction }) => {
    requested = Math.max(requested, extraction);
  });

  // The first ask comes with the start; a run started without one has nothing to do.
  if (!(await condition(() => requested > 0, '1 minute'))) return { extraction: 0, status };
  while (requested > handled) {
    const job = await record.beginExtraction(ref);
    if (!job) return { extraction: handled, status: 'NO_INVOICE' };
    // The invoice's number is the newest asked for; an ended one was recorded by an earlier run.
    handled = Math.max(requested, job.extraction);
    if (job.status !== 'PENDING') continue;
    const outcome = await extract(job, input);
    await record.recordExtraction({ ...ref, documentId: job.documentId, extraction: job.extraction, outcome });
    status = outcome.status;
    if (requested > handled && workflowInfo().historyLength > HISTORY_LIMIT) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof invoiceExtraction>({ ...input, requested });
    }
  }
  return { extraction: handled, status };
}

async function extract(job: ExtractionJob, input: InvoiceExtractionInput): Promise<ExtractionOutcome> {
  let upload;
  try {
    upload = await awaitUpload(input.organizationId, job, input.uploadGraceMs);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return { status: 'FAILED', reason: 'The document store could not be read' };
  }
  if (upload.status === 'MISSING') return { status: 'NOT_UPLOADED' };
  if (upload.status === 'MISMATCH') return { status: 'FAILED', reason: upload.reason };

  const deadline = Date.now() + input.extractionDeadlineMs;
  try {
    const document = { organizationId: input.organizationId, documentId: job.documentId, sizeBytes: job.sizeBytes };
    const { resultId } = await providerSteps(deadline - Date.now()).analyzeInvoice(
      patched(ANALYZE_CHECKS_DIGEST) ? { objectKey: job.objectKey, document } : { objectKey: job.objectKey },
    );
    for (;;) {
      const analysis = await providerSteps(deadline - Date.now()).readAnalysis({ resultId });
      if (analysis.status === 'succeeded') {
        const { amountMinorUnits, currency, issuedDate, dueDate, details } = analysis.invoice;
        return { status: 'EXTRACTED', amountMinorUnits, currency, issuedDate, dueDate, details };
      }
      if (analysis.status === 'failed') return { status: 'FAILED', reason: analysis.reason };
      const left = deadline - Date.now();
      if (left <= 0) return { status: 'FAILED', reason: 'The extraction did not finish in time' };
      const wait = Math.min(
        MAX_RESULT_POLL_MS,
        Math.max(MIN_RESULT_POLL_MS, analysis.retryAfterMs ?? MIN_RESULT_POLL_MS),
      );
      await sleep(Math.min(wait, left));
    }
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    // A refusal carries the provider's reason; running out of retries means it stayed unavailable.
    const cause = error.cause;
    const refused = cause instanceof ApplicationFailure && FINAL.has(cause.type ?? '') ? cause.message : undefined;
    return { status: 'FAILED', reason: refused ?? 'The extraction provider was unavailable' };
  }
}

/** Asks the store for the document, more and more patiently, until it is there or its wait is over. */
async function awaitUpload(organizationId: string, job: ExtractionJob, graceMs: number) {
  const waitUntil = job.uploadExpiresAtMs + graceMs;
  let interval = FIRST_UPLOAD_POLL_MS;
  for (;;) {
    const found = await storeSteps(waitUntil - Date.now()).findUpload({
      organizationId,
      documentId: job.documentId,
      objectKey: job.objectKey,
      contentType: job.contentType,
      sizeBytes: job.sizeBytes,
    });
    const left = waitUntil - Date.now();
    if (found.status !== 'MISSING' || left <= 0) return found;
    await sleep(Math.min(interval, left));
    interval = Math.min(interval * 2, MAX_UPLOAD_POLL_MS);
  }
}

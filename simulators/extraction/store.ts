import { createHash, randomUUID } from 'node:crypto';
import { INVOICE_MODEL_ID } from '../../providers/extraction/protocol';
import { type DocumentView, MAX_ANALYSES, RETENTION_MS, type SimulatedAnalysis, type Stored, statusOf } from './model';
import { formatOf, readDocument } from './ocr';
import { invalidContent } from './refusals';

/**
 * The analyses the simulator keeps (in memory, bounded: 24 hours and at most MAX_ANALYSES, as
 * Azure keeps results), shared by its API and control API. Each analysis's outcome is decided
 * when it starts, from the document and its `SIMULATE:` directive, and shown once processing is over.
 */
export interface AnalysisStore {
  /** Starts an analysis of `bytes`: its outcome is decided now, shown once processing is over. */
  analyse(bytes: Buffer, view: DocumentView): string;
  /** The analysis with this id, once results older than Azure keeps them are forgotten. */
  find(resultId: string): Stored | undefined;
  forget(resultId: string): void;
  /** Every analysis kept, with its status now. */
  list(): SimulatedAnalysis[];
  clear(): void;
}

export function createAnalysisStore(processingMs: () => number): AnalysisStore {
  const analyses = new Map<string, Stored>();
  /** The documents (sha256) whose `unreadable-once` failure has been given. */
  const failedOnce = new Set<string>();

  /** Forgets results older than Azure keeps them, then the oldest past MAX_ANALYSES. */
  function prune(now: number) {
    for (const [id, stored] of analyses) {
      if (now - stored.createdMs < RETENTION_MS && analyses.size <= MAX_ANALYSES) break;
      analyses.delete(id);
    }
    for (const sha of failedOnce) {
      if (failedOnce.size <= MAX_ANALYSES) break;
      failedOnce.delete(sha);
    }
  }

  function analyse(bytes: Buffer, view: DocumentView): string {
    const now = Date.now();
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const format = formatOf(bytes);
    const directive = /^[ \t]*SIMULATE:[ \t]*([A-Za-z-]+)[ \t]*$/m.exec(bytes.toString('latin1'))?.[1]?.toLowerCase();
    let outcome: Stored['outcome'];
    if (!format || directive === 'unreadable') outcome = { status: 'failed', error: invalidContent };
    else if (directive === 'unreadable-once' && !failedOnce.has(sha256)) {
      failedOnce.add(sha256);
      outcome = { status: 'failed', error: invalidContent };
    } else outcome = { status: 'succeeded', analyzeResult: readDocument(bytes, format) };
    const processing = processingMs() * (directive === 'slow' ? 10 : 1);
    const resultId = randomUUID();
    analyses.set(resultId, {
      view: {
        resultId,
        modelId: INVOICE_MODEL_ID,
        ...view,
        sizeBytes: bytes.length,
        sha256,
        format,
        ...(directive && { directive }),
        createdDateTime: new Date(now).toISOString(),
      },
      createdMs: now,
      startedMs: now + Math.round(processing / 3),
      readyMs: now + processing,
      outcome,
    });
    prune(now);
    return resultId;
  }

  return {
    analyse,
    find(resultId) {
      prune(Date.now());
      return analyses.get(resultId);
    },
    forget(resultId) {
      analyses.delete(resultId);
    },
    list() {
      const now = Date.now();
      prune(now);
      return [...analyses.values()].map((stored) => ({ ...stored.view, status: statusOf(stored, now) }));
    },
    clear() {
      analyses.clear();
      failedOnce.clear();
    },
  };
}

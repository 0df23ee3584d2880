import { defineSignal } from '@temporalio/workflow';

/** Messages of the invoice-extraction workflow, importable by the API without its body. */

export interface InvoiceExtractionInput {
  organizationId: string;
  merchantId: string;
  invoiceId: string;
  documentId: string;
  /** How long after its upload URL expires the document may still appear in the store. */
  uploadGraceMs: number;
  /** How long one extraction may take, an unavailable provider's retries included. */
  extractionDeadlineMs: number;
  /** Extractions asked for but not yet begun, carried over a continue-as-new. */
  requested?: number;
}

/** What one extraction is about: the number asked for and the document it reads. */
export interface ExtractionJob {
  status: string;
  extraction: number;
  documentId: string;
  objectKey: string;
  contentType: string;
  sizeBytes: number;
  uploadExpiresAtMs: number;
}

/** What the store holds for a document: the upload as presigned, nothing yet, or something else. */
export type UploadFound = { status: 'PRESENT' } | { status: 'MISSING' } | { status: 'MISMATCH'; reason: string };

/**
 * An extraction was asked for: `extraction` is the invoice's extraction number after the ask
 * (sent with signal-with-start, so a finished run is followed by a new one and a running one
 * takes it after the current extraction).
 */
export const extractionRequestedSignal = defineSignal<[{ extraction: number }]>('extractionRequested');

/** Failure types of the extraction's steps that end an extraction at once. */
export const ExtractionFailure = {
  /** The provider refused the request and asking again will not help (its message says why). */
  REFUSED: 'EXTRACTION_REFUSED',
  /** The provider no longer knows the analysis (it keeps results for a day). */
  RESULT_GONE: 'EXTRACTION_RESULT_GONE',
  /** No extraction provider is configured. */
  NOT_CONFIGURED: 'NOT_CONFIGURED',
  /** The kept copy is not the document registered: its SHA-256 differs from the one recorded. */
  DOCUMENT_CHANGED: 'DOCUMENT_CHANGED',
} as const;

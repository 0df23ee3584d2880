import type { Client } from '@temporalio/client';
import type { Config } from '../../config';
import type { ExtractionRequest, FinancingInvoiceRow } from '../../db/financing/invoices';
import { workflowIds } from '../../workflows/ids';
import type { invoiceExtraction } from '../../workflows/financing/invoice-extraction';
import { extractionRequestedSignal } from '../../workflows/financing/messages';
import { OrganizationId } from '../../workflows/search-attributes';

/** What the financing runs are started with. */
export type FinancingWorkflowConfig = Pick<
  Config,
  'TEMPORAL_TASK_QUEUE' | 'DOCUMENT_UPLOAD_GRACE' | 'EXTRACTION_DEADLINE'
>;

/** The one module through which the API drives the financing area's invoice-extraction runs. */
export function financingWorkflows(temporal: Client, config: FinancingWorkflowConfig) {
  return {
    /**
     * Asks the document's extraction run for the invoice's current extraction. A new ask goes by
     * signal-with-start: a running run takes it after its current extraction, a finished one is
     * followed by a new run. An ask already made (PENDING) only starts a run if none is running
     * (one lost to a crash between the statement and the signal): nothing is written to a live
     * run, so repeated POSTs cannot grow its history.
     */
    async askForExtraction(invoice: FinancingInvoiceRow, request: ExtractionRequest): Promise<void> {
      const options = {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowId: workflowIds.invoiceExtraction(invoice.document_id),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
        typedSearchAttributes: [{ key: OrganizationId, value: invoice.organization_id }],
      };
      const input = {
        organizationId: invoice.organization_id,
        merchantId: invoice.merchant_id,
        invoiceId: invoice.id,
        documentId: invoice.document_id,
        uploadGraceMs: config.DOCUMENT_UPLOAD_GRACE,
        extractionDeadlineMs: config.EXTRACTION_DEADLINE,
      };
      if (request === 'IN_PROGRESS') {
        await temporal.workflow.start<typeof invoiceExtraction>('invoiceExtraction', {
          ...options,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ ...input, requested: invoice.extraction }],
        });
        return;
      }
      await temporal.workflow.signalWithStart<typeof invoiceExtraction, [{ extraction: number }]>('invoiceExtraction', {
        ...options,
        args: [input],
        signal: extractionRequestedSignal,
        signalArgs: [{ extraction: invoice.extraction }],
      });
    },
  };
}

export type FinancingWorkflows = ReturnType<typeof financingWorkflows>;

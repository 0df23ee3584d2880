import { commonLead, reasonFor, redactor, refusal } from './errors';
import { outcomeOf } from './invoice';
import {
  AnalyzeOperationSchema,
  ExtractionError,
  type InvoiceExtractionClient,
  OPERATION_LOCATION_HEADER,
  RESULT_ID,
  RETRY_AFTER_HEADER,
} from './protocol';
import { createExtractionTransport } from './transport';

export { invoiceOf } from './invoice';

export interface ExtractionClientOptions {
  /** Azure AI Document Intelligence's endpoint, e.g. https://<resource>.cognitiveservices.azure.com (the simulator's in testing). */
  endpoint: string;
  apiKey: string;
  timeoutMs?: number;
}

/**
 * The invoice-extraction client (Azure AI Document Intelligence, prebuilt-invoice, REST API
 * 2024-11-30; see protocol.ts). Both calls read headers (Operation-Location, Retry-After), so they
 * go through fetchWithDeadline with a fetch that keeps the response's headers (./transport.ts).
 * Nothing Azure sends is used unchecked: bodies through zod, the result id through RESULT_ID,
 * Operation-Location against the configured endpoint. The key and the document URL never reach an
 * error message (./errors.ts); a result becomes our invoice in ./invoice.ts.
 */
export function createExtractionClient(options: ExtractionClientOptions): InvoiceExtractionClient {
  const { analyzeUrl, resultUrl, exchange, resultIdOf } = createExtractionTransport({
    endpoint: options.endpoint,
    apiKey: options.apiKey,
    timeoutMs: options.timeoutMs ?? 10_000,
  });

  return {
    async analyze({ documentUrl }) {
      const redact = redactor(options.apiKey, documentUrl);
      let source: URL | undefined;
      try {
        source = new URL(documentUrl);
      } catch {
        source = undefined;
      }
      if (!source || !/^https?:$/.test(source.protocol))
        throw new ExtractionError('The document URL is not an absolute http(s) URL.', { transient: false });
      const { answer, headers } = await exchange(analyzeUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ urlSource: documentUrl }),
      });
      if (answer.status === 202) {
        const resultId = resultIdOf(headers?.get(OPERATION_LOCATION_HEADER));
        if (!resultId)
          throw new ExtractionError(
            'The extraction provider accepted the document without an Operation-Location naming a prebuilt-invoice result at our endpoint.',
            { httpStatus: 202, transient: false },
          );
        return { resultId };
      }
      throw await refusal(
        answer,
        headers,
        (status, code) =>
          commonLead(status) ??
          (status === 404
            ? 'The extraction provider does not serve the prebuilt-invoice model at this endpoint and API version'
            : status === 400
              ? reasonFor(code).replace(/\.$/, '')
              : 'The extraction provider refused the document'),
        redact,
      );
    },

    async result(resultId) {
      const redact = redactor(options.apiKey);
      if (typeof resultId !== 'string' || !RESULT_ID.test(resultId))
        throw new ExtractionError('The analysis result id is malformed.', { transient: false });
      const { answer, headers } = await exchange(resultUrl(resultId), { method: 'GET' });
      if (answer.status !== 200)
        throw await refusal(
          answer,
          headers,
          (status) =>
            commonLead(status) ??
            (status === 404
              ? 'The extraction provider does not know the analysis: its id is unknown or it expired'
              : 'The extraction provider refused to read the analysis'),
          redact,
        );
      let body: unknown;
      try {
        body = await answer.json();
      } catch {
        body = undefined;
      }
      const parsed = AnalyzeOperationSchema.safeParse(body);
      if (!parsed.success)
        throw new ExtractionError('The extraction provider answered the analysis with a body we cannot read.', {
          httpStatus: 200,
          transient: false,
        });
      return outcomeOf(parsed.data, headers?.get(RETRY_AFTER_HEADER));
    },
  };
}

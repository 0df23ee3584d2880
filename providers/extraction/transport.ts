import { fetchWithDeadline, type HttpAnswer, HttpTimeoutError } from '../http';
import { networkCode } from './errors';
import { analyzePath, analyzeResultPath, API_VERSION, ExtractionError, INVOICE_MODEL_ID, RESULT_ID } from './protocol';

/**
 * The invoice-extraction client's HTTP: the configured endpoint (checked once), the URLs of both
 * calls built from it alone, one exchange with the key and a deadline through fetchWithDeadline (with
 * a fetch that keeps the response's headers: both calls read them), no answer mapped to a transient
 * ExtractionError, and the result id an Operation-Location names, checked against the endpoint.
 */
export interface ExtractionTransport {
  /** The analyze URL of prebuilt-invoice at the endpoint, with the api-version. */
  analyzeUrl: string;
  /** The URL of one analysis's result at the endpoint, with the api-version. */
  resultUrl(resultId: string): string;
  /** One exchange: the answer and its headers, or ExtractionError for no answer (transient). */
  exchange(url: string, init: RequestInit): Promise<{ answer: HttpAnswer; headers?: Headers }>;
  /** The result id an Operation-Location names, if it points at our endpoint's prebuilt-invoice analyzeResults. */
  resultIdOf(location: string | null | undefined): string | undefined;
}

export function createExtractionTransport(options: {
  endpoint: string;
  apiKey: string;
  timeoutMs: number;
}): ExtractionTransport {
  const { apiKey, timeoutMs } = options;
  const endpoint = new URL(options.endpoint);
  if (!/^https?:$/.test(endpoint.protocol) || endpoint.search || endpoint.hash || endpoint.username)
    throw new Error('The extraction endpoint must be an http(s) URL without a query, fragment or credentials');
  const base = `${endpoint.origin}${endpoint.pathname.replace(/\/+$/, '')}`;
  const query = `?api-version=${API_VERSION}`;

  async function exchange(url: string, init: RequestInit): Promise<{ answer: HttpAnswer; headers?: Headers }> {
    let headers: Headers | undefined;
    try {
      const answer = await fetchWithDeadline(
        url,
        {
          ...init,
          headers: { 'Ocp-Apim-Subscription-Key': apiKey, Accept: 'application/json', ...init.headers },
        },
        timeoutMs,
        async (input, requestInit) => {
          const response = await fetch(input, requestInit);
          headers = response.headers;
          return response;
        },
      );
      return { answer, headers };
    } catch (error) {
      const timedOut =
        error instanceof HttpTimeoutError ||
        (error as Error)?.name === 'TimeoutError' ||
        (error as Error)?.name === 'AbortError';
      throw new ExtractionError(
        timedOut
          ? `The extraction provider did not answer within ${timeoutMs} ms.`
          : `The extraction provider is unreachable (${networkCode(error) ?? 'network error'}).`,
        { transient: true },
      );
    }
  }

  function resultIdOf(location: string | null | undefined): string | undefined {
    if (!location) return undefined;
    let url: URL;
    try {
      url = new URL(location);
    } catch {
      return undefined;
    }
    if (url.origin !== endpoint.origin || url.username || url.password) return undefined;
    const prefix = `${base.slice(endpoint.origin.length)}${analyzeResultPath(INVOICE_MODEL_ID, '')}`;
    if (!url.pathname.startsWith(prefix)) return undefined;
    const id = url.pathname.slice(prefix.length);
    return RESULT_ID.test(id) ? id : undefined;
  }

  return {
    analyzeUrl: `${base}${analyzePath(INVOICE_MODEL_ID)}${query}`,
    resultUrl: (resultId) => `${base}${analyzeResultPath(INVOICE_MODEL_ID, resultId)}${query}`,
    exchange,
    resultIdOf,
  };
}

/**
 * fetch with a deadline over the whole exchange, headers and body alike, whose timer is cleared
 * as soon as the answer is in. (AbortSignal.timeout keeps each request's signal, and what
 * listens to it, alive until the timer fires: at hundreds of provider calls a second that held
 * hundreds of megabytes in the worker.) The answer comes back fully read.
 */
export async function fetchWithDeadline(url: string, init: RequestInit, timeoutMs: number, fetchImpl: typeof fetch = fetch): Promise<Response> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  try {
    const response = await fetchImpl(url, { ...init, signal: controller.signal });
    const bodiless = response.status === 204 || response.status === 205 || response.status === 304;
    const body = bodiless ? null : await response.arrayBuffer();
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  } finally {
    clearTimeout(timer);
  }
}

import { type HttpAnswer, httpsAgentTrusting, request } from '../http';
import { isObject, KycProviderError, type KycProviderOptions } from './protocol';
import { signV2 } from './signature';

/**
 * The identity-verification client's HTTP, shared by its v2 and v3 operations: one agent and
 * deadline per client, v2 request signatures, and the one mapping of an unreachable provider,
 * a refusal or an unreadable token answer to a KycProviderError (which says whether to retry).
 */
export type SendInit = { method?: string; headers?: Record<string, string>; body?: string | Uint8Array };

export function createKycTransport(options: KycProviderOptions) {
  const { baseUrl, partnerId, apiKey } = options;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const now = options.clock ?? (() => new Date());
  const httpsAgent = httpsAgentTrusting(options.ca);

  async function send(url: string, init: SendInit): Promise<HttpAnswer> {
    try {
      return await request(new URL(url, baseUrl).href, { ...init, httpsAgent }, timeoutMs);
    } catch (error) {
      throw new KycProviderError(`provider unreachable: ${(error as Error).message}`, undefined, true);
    }
  }

  const signed = () => {
    const timestamp = now().toISOString();
    return { signature: signV2(apiKey, partnerId, timestamp), timestamp };
  };

  const postJson = (path: string, body: unknown) =>
    send(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  const partnerHeaders = () => ({ 'smileid-partner-id': partnerId, 'smileid-api-key': apiKey });

  return { partnerId, apiKey, now, send, signed, postJson, partnerHeaders };
}

export type KycTransport = ReturnType<typeof createKycTransport>;

/**
 * A refusal as an error. 401 is retryable: credentials (or a revoked token) can be fixed while
 * runs wait, and a run failed for it could not resume. `quiet` leaves the body out (a storage
 * answer is not the provider's and may echo anything).
 */
export async function failure(response: HttpAnswer, what: string, quiet = false): Promise<never> {
  const text = quiet ? '' : await response.text().catch(() => '');
  const retryable = response.status >= 500 || response.status === 429 || response.status === 401;
  throw new KycProviderError(
    `${what}: provider answered ${response.status} ${text.slice(0, 200)}`.trim(),
    response.status,
    retryable,
  );
}

/** A multipart body as bytes and its content type (with the boundary). */
export async function multipart(fields: [string, string | Blob, string?][]) {
  const form = new FormData();
  for (const [name, value, fileName] of fields) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, fileName);
  }
  const encoded = new Response(form);
  return {
    body: new Uint8Array(await encoded.arrayBuffer()),
    contentType: encoded.headers.get('content-type')!,
  };
}

/** A token from a token answer, or a retryable error for an unreadable one. */
export async function tokenOf(response: HttpAnswer, what: string): Promise<string> {
  const body = (await response.json().catch(() => undefined)) as unknown;
  const token = isObject(body) ? body.token : undefined;
  if (typeof token !== 'string' || token === '')
    throw new KycProviderError(`${what}: unreadable answer`, response.status, true);
  return token;
}

import { harness } from './harness';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // Tests read arbitrary JSON answers.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface CallOptions {
  json?: unknown;
  /** A raw body, sent as given (with contentType when set). */
  raw?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  baseUrl?: string;
}

/** One real HTTP request to the test API (or another base URL). */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = options.contentType ?? 'application/json';
  } else if (options.raw !== undefined) {
    body = options.raw;
    if (options.contentType) headers['content-type'] = options.contentType;
  }
  const response = await fetch(`${options.baseUrl ?? harness().baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/**
 * A deprecated operation's or channel's answer (errors included): RFC 9745 `Deprecation` as
 * `@<epoch seconds>` of DEPRECATED_SINCE, RFC 8594 `Sunset` (DEPRECATION_SUNSET), and `Link`s
 * to the reference (`rel="deprecation"`) and, when there is one, the successor.
 */
export function assertDeprecated(reply: Reply, successor?: string) {
  const { config } = harness();
  const problems: string[] = [];
  if (reply.headers.get('deprecation') !== `@${Math.floor(config.DEPRECATED_SINCE.getTime() / 1000)}`)
    problems.push(`Deprecation: ${reply.headers.get('deprecation')}`);
  if (reply.headers.get('sunset') !== config.DEPRECATION_SUNSET.toUTCString())
    problems.push(`Sunset: ${reply.headers.get('sunset')}`);
  const link = reply.headers.get('link') ?? '';
  if (!/rel="deprecation"/.test(link)) problems.push(`Link without rel="deprecation": ${link}`);
  if (successor && !link.includes(`<${successor}>; rel="successor-version"`))
    problems.push(`Link without the successor ${successor}: ${link}`);
  if (problems.length > 0) throw new Error(`not announced as deprecated (${reply.status}): ${problems.join('; ')}`);
}

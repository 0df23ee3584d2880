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

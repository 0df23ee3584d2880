import { fetchWithDeadline, HttpTimeoutError } from '../http';
import {
  type EmailAddress,
  type EmailClient,
  EmailError,
  type EmailSent,
  MAIL_SEND_PATH,
  type MailSendRequest,
  MESSAGE_ID_HEADER,
  RATE_LIMIT_RESET_HEADER,
  type SendGridErrorItem,
} from './protocol';

export interface EmailClientOptions {
  /** SendGrid's API root, e.g. https://api.sendgrid.com (the simulator's in testing). */
  baseUrl: string;
  apiKey: string;
  /** A verified sender, or an address on an authenticated domain. */
  from: EmailAddress;
  timeoutMs?: number;
}

/** A network error that happened before anything was sent: the message certainly did not go out. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/** The socket's error code, from node:http's error or fetch's `cause` (an AggregateError's first, for dual-stack hosts). */
function networkCode(error: unknown): string | undefined {
  const err = error as { code?: string; cause?: { code?: string; errors?: { code?: string }[] } };
  return err.cause?.code ?? err.cause?.errors?.[0]?.code ?? err.code;
}

function errorItems(text: string): SendGridErrorItem[] {
  try {
    const body = JSON.parse(text) as { errors?: unknown };
    if (!Array.isArray(body?.errors)) return [];
    return body.errors
      .filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null)
      .map((e) => ({
        message: typeof e.message === 'string' ? e.message : '',
        field: typeof e.field === 'string' ? e.field : null,
        help: typeof e.help === 'string' ? e.help : null,
      }));
  } catch {
    return [];
  }
}

/**
 * Removes from a message the key and the e-mail's text and HTML, also as JSON escapes
 * them, and every link they carry on its own (a provider or proxy echoing the request would
 * otherwise hand a single-use link to our logs). Longest first, so a link inside the text goes
 * with the text.
 */
function redactor(secrets: string[]): (message: string) => string {
  const links = secrets.flatMap((s) => s.match(/https?:\/\/[^\s"'<>\\]+/g) ?? []);
  const all = [...secrets, ...secrets.map((s) => JSON.stringify(s).slice(1, -1)), ...links]
    .filter((s) => s.length >= 4)
    .sort((a, b) => b.length - a.length);
  return (message) => all.reduce((m, secret) => m.split(secret).join('[redacted]'), message).slice(0, 500);
}

/**
 * The e-mail provider client (SendGrid's v3 Mail Send API, see protocol.ts): one message to one
 * address per call. The answer's `X-Message-Id` header is the message's id, so this goes through
 * fetchWithDeadline (whose HttpAnswer, like request's, carries no headers) with a fetch that
 * keeps the response's headers. The API key and the message (it carries single-use links) never
 * reach an error message: SendGrid's own refusals (field names, fixed wording) do, redacted all
 * the same.
 */
export function createEmailClient(options: EmailClientOptions): EmailClient {
  const url = `${options.baseUrl.replace(/\/+$/, '')}${MAIL_SEND_PATH}`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  return {
    async send({ to, subject, text, html }): Promise<EmailSent> {
      const redact = redactor([options.apiKey, text, html ?? '']);
      const body: MailSendRequest = {
        personalizations: [{ to: [{ email: to }] }],
        from: options.from,
        subject,
        // text/plain before text/html: SendGrid refuses the other order.
        content: [{ type: 'text/plain', value: text }, ...(html ? [{ type: 'text/html', value: html }] : [])],
      };
      let headers: Headers | undefined;
      let answer;
      try {
        answer = await fetchWithDeadline(
          url,
          {
            method: 'POST',
            headers: { Authorization: `Bearer ${options.apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify(body),
          },
          timeoutMs,
          async (input, init) => {
            const response = await fetch(input, init);
            headers = response.headers;
            return response;
          },
        );
      } catch (error) {
        const timedOut =
          error instanceof HttpTimeoutError ||
          (error as Error)?.name === 'TimeoutError' ||
          (error as Error)?.name === 'AbortError';
        const code = timedOut ? undefined : networkCode(error);
        throw new EmailError(
          timedOut
            ? `the e-mail provider did not answer within ${timeoutMs} ms`
            : `the e-mail provider is unreachable (${code ?? 'network error'})`,
          { indeterminate: timedOut || !(code && NOT_SENT.has(code)), transient: true },
        );
      }
      if (answer.status === 202) {
        const messageId = headers?.get(MESSAGE_ID_HEADER);
        if (!messageId)
          throw new EmailError('the e-mail provider accepted the message without an X-Message-Id', {
            httpStatus: 202,
            indeterminate: true,
            transient: false,
          });
        return { messageId };
      }
      const items = errorItems(await answer.text());
      const reasons = items.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ');
      const status = answer.status;
      let retryAfterMs: number | undefined;
      const reset = Number(headers?.get(RATE_LIMIT_RESET_HEADER));
      if (status === 429 && Number.isFinite(reset) && reset > 0) retryAfterMs = Math.max(0, reset * 1000 - Date.now());
      const field = items.find((e) => e.field)?.field ?? undefined;
      throw new EmailError(
        redact(
          status === 200
            ? 'the e-mail provider validated the message without queuing it (HTTP 200: sandbox mode)'
            : `the e-mail provider refused the message: HTTP ${status}${reasons ? ` ${reasons}` : ''}`,
        ),
        {
          httpStatus: status,
          ...(field && { field }),
          ...(retryAfterMs !== undefined && { retryAfterMs }),
          indeterminate: status >= 500,
          transient: status >= 500 || status === 429,
        },
      );
    },
  };
}

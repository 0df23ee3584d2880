import { HttpTimeoutError, request } from '../http';
import { isAccepted, isTransient, type SendResponse, type SmsClient, SmsError, type SmsSent } from './protocol';

export interface SmsClientOptions {
  /** The gateway's API root, e.g. https://api.africastalking.com (the sandbox's in testing). */
  baseUrl: string;
  username: string;
  apiKey: string;
  /** A registered sender id or shortcode; the account's default when absent. */
  senderId?: string;
  timeoutMs?: number;
}

/** A network error that happened before anything was sent: the text certainly did not go out. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/**
 * The SMS gateway client (Africa's Talking's messaging API, see protocol.ts): one text to one
 * number per call, so each recipient's outcome is the call's. The API key and the message (an
 * OTP, a link) never reach an error message.
 */
export function createSmsClient(options: SmsClientOptions): SmsClient {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/version1/messaging`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  return {
    async send({ to, message }): Promise<SmsSent> {
      const form = new URLSearchParams({ username: options.username, to, message });
      if (options.senderId) form.set('from', options.senderId);
      let answer;
      try {
        answer = await request(
          url,
          {
            method: 'POST',
            headers: {
              apiKey: options.apiKey,
              Accept: 'application/json',
              'Content-Type': 'application/x-www-form-urlencoded',
            },
            body: form.toString(),
          },
          timeoutMs,
        );
      } catch (error) {
        const code = (error as { code?: string }).code;
        const sent = !(code && NOT_SENT.has(code));
        throw new SmsError(
          error instanceof HttpTimeoutError
            ? 'the SMS gateway did not answer in time'
            : `the SMS gateway is unreachable (${code ?? 'network error'})`,
          { indeterminate: sent, transient: true },
        );
      }
      if (answer.status !== 201) {
        // The status only: the gateway's text can echo what was sent (a number, the message).
        throw new SmsError(`the SMS gateway refused the request: HTTP ${answer.status}`, {
          httpStatus: answer.status,
          indeterminate: answer.status >= 500,
          transient: answer.status >= 500 || answer.status === 429,
        });
      }
      let body: SendResponse;
      try {
        body = (await answer.json()) as SendResponse;
      } catch {
        throw new SmsError('the SMS gateway answered something other than JSON', {
          httpStatus: answer.status,
          indeterminate: true,
          transient: true,
        });
      }
      const recipient = body?.SMSMessageData?.Recipients?.[0];
      if (!recipient || typeof recipient.statusCode !== 'number')
        throw new SmsError('the SMS gateway answered without a recipient', {
          httpStatus: answer.status,
          indeterminate: true,
          transient: true,
        });
      if (!isAccepted(recipient.statusCode))
        throw new SmsError(`the SMS gateway refused the recipient: ${recipient.statusCode} ${recipient.status}`, {
          httpStatus: answer.status,
          statusCode: recipient.statusCode,
          indeterminate: false,
          transient: isTransient(recipient.statusCode),
        });
      return {
        messageId: String(recipient.messageId),
        statusCode: recipient.statusCode,
        status: String(recipient.status),
        cost: String(recipient.cost),
      };
    },
  };
}

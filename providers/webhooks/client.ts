import http from 'node:http';
import https from 'node:https';
import { type AllowedAddresses, AddressRefused, checkedLookup, hostRefusal } from './addresses';
import { signedHeaders } from './signature';

/** What a receiver answered (its body cut to RESPONSE_KEPT bytes), or why nothing was answered. */
export type DeliveryOutcome =
  | { kind: 'answered'; status: number; retryAfter?: string; body: string; durationMs: number }
  | { kind: 'unanswered'; error: 'timeout' | 'connection' | 'address'; detail: string; durationMs: number };

/** How much of a receiver's answer is kept for operators. */
const RESPONSE_KEPT = 1024;

export interface WebhookMessage {
  url: string;
  /** The event id: the same on every attempt, so a receiver drops duplicates by it. */
  id: string;
  timestampSeconds: number;
  body: string;
  secrets: readonly string[];
}

/**
 * Posts a signed message to a client app's endpoint. Every address the host resolves to is
 * checked at connection time (checkedLookup), and a literal IP before; redirects are not
 * followed (the answer is what counts). One socket per delivery: endpoints are many, and a
 * pooled socket to a receiver would outlive the address check that let it open.
 */
export function createWebhookClient(options: { allowed: AllowedAddresses; timeoutMs: number; userAgent: string }) {
  const lookup = checkedLookup(options.allowed);
  return {
    async deliver(message: WebhookMessage): Promise<DeliveryOutcome> {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const target = new URL(message.url);
      const literalRefusal = /^[\d.]+$|^\[/.test(target.hostname)
        ? await hostRefusal(target.hostname, options.allowed)
        : undefined;
      if (literalRefusal) return { kind: 'unanswered', error: 'address', detail: literalRefusal, durationMs: 0 };
      const headers = {
        'content-type': 'application/json',
        'user-agent': options.userAgent,
        ...signedHeaders(message.secrets, message.id, message.timestampSeconds, message.body),
      };
      return new Promise((resolve) => {
        const transport = target.protocol === 'https:' ? https : http;
        const req = transport.request(target, { method: 'POST', headers, lookup, agent: false }, (res) => {
          const kept: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (size < RESPONSE_KEPT) kept.push(chunk.subarray(0, RESPONSE_KEPT - size));
            size += chunk.length;
          });
          res.on('end', () => {
            clearTimeout(timer);
            const retryAfter = res.headers['retry-after'];
            resolve({
              kind: 'answered',
              status: res.statusCode ?? 0,
              ...(retryAfter ? { retryAfter } : {}),
              body: Buffer.concat(kept).toString('utf8'),
              durationMs: elapsed(),
            });
          });
          res.on('error', (error) => settle(error));
          // Destroyed mid-answer (the deadline): no 'end' comes.
          res.on('close', () => {
            if (!res.complete) settle(new Error('answer cut short'));
          });
        });
        const timer = setTimeout(() => {
          timedOut = true;
          req.destroy();
        }, options.timeoutMs);
        let timedOut = false;
        function settle(error: Error) {
          clearTimeout(timer);
          if (timedOut)
            return resolve({
              kind: 'unanswered',
              error: 'timeout',
              detail: `no answer within ${options.timeoutMs} ms`,
              durationMs: elapsed(),
            });
          if (error instanceof AddressRefused)
            return resolve({ kind: 'unanswered', error: 'address', detail: error.message, durationMs: elapsed() });
          const code = (error as NodeJS.ErrnoException).code;
          resolve({ kind: 'unanswered', error: 'connection', detail: code ?? error.message, durationMs: elapsed() });
        }
        req.on('error', settle);
        req.end(message.body);
      });
    },
  };
}
export type WebhookClient = ReturnType<typeof createWebhookClient>;

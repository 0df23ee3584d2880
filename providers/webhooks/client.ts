import http from 'node:http';
import https from 'node:https';
import { type AllowedAddresses, AddressRefused, allowedFor, checkedLookup, hostRefusal } from './addresses';
import { signedHeaders } from './signature';

/** What a receiver answered (the start of its body), or why nothing was answered. */
export type DeliveryOutcome =
  | {
      kind: 'answered';
      status: number;
      retryAfter?: string;
      contentType?: string;
      /** The first RESPONSE_KEPT bytes of the answer, and how many it had (as far as read). */
      body: string;
      size: number;
      durationMs: number;
    }
  | { kind: 'unanswered'; error: 'timeout' | 'connection' | 'address'; detail: string; durationMs: number };

/** How much of a receiver's answer is read (and kept for operators); the rest is not waited for. */
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
 *
 * Whatever the receiver does, the promise settles by the deadline: the status line decides the
 * outcome and at most RESPONSE_KEPT bytes of the body are read (a 2xx with an endless body is
 * still a 2xx), an Upgrade (101) or a socket closed mid-answer settles at once.
 */
export function createWebhookClient(options: {
  allowed: AllowedAddresses;
  timeoutMs: number;
  userAgent: string;
  /** The service's own ports (servicePorts): a target on one may reach public addresses only. */
  ownPorts?: ReadonlySet<number>;
}) {
  const lookups = new Map<AllowedAddresses, ReturnType<typeof checkedLookup>>();
  const lookupFor = (allowed: AllowedAddresses) => {
    let lookup = lookups.get(allowed);
    if (!lookup) lookups.set(allowed, (lookup = checkedLookup(allowed)));
    return lookup;
  };
  return {
    async deliver(message: WebhookMessage): Promise<DeliveryOutcome> {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const target = new URL(message.url);
      const allowed = allowedFor(target, options.allowed, options.ownPorts ?? new Set());
      const lookup = lookupFor(allowed);
      const literalRefusal = /^[\d.]+$|^\[/.test(target.hostname)
        ? await hostRefusal(target.hostname, allowed)
        : undefined;
      if (literalRefusal) return { kind: 'unanswered', error: 'address', detail: literalRefusal, durationMs: 0 };
      const headers = {
        'content-type': 'application/json',
        'user-agent': options.userAgent,
        ...signedHeaders(message.secrets, message.id, message.timestampSeconds, message.body),
      };
      return new Promise((resolve) => {
        let settled = false;
        let answer:
          { status: number; retryAfter?: string; contentType?: string; kept: Buffer[]; size: number } | undefined;
        const transport = target.protocol === 'https:' ? https : http;
        const req = transport.request(target, { method: 'POST', headers, lookup, agent: false }, (res) => {
          const retryAfter = res.headers['retry-after'];
          const contentType = res.headers['content-type'];
          answer = {
            status: res.statusCode ?? 0,
            ...(retryAfter ? { retryAfter } : {}),
            ...(contentType ? { contentType } : {}),
            kept: [],
            size: 0,
          };
          const reading = answer;
          res.on('data', (chunk: Buffer) => {
            reading.kept.push(chunk.subarray(0, RESPONSE_KEPT - reading.size));
            reading.size += chunk.length;
            if (reading.size >= RESPONSE_KEPT) finish();
          });
          res.on('end', () => finish());
          res.on('error', () => finish());
          res.on('close', () => finish());
        });
        const timer = setTimeout(() => finish(new Error('timeout')), options.timeoutMs);

        /** Settles once: the answer when its status line came, else why none came; the socket goes. */
        function finish(error?: Error) {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          req.destroy();
          if (answer) {
            const { kept, ...rest } = answer;
            return resolve({
              kind: 'answered',
              ...rest,
              body: Buffer.concat(kept).toString('utf8'),
              durationMs: elapsed(),
            });
          }
          if (error?.message === 'timeout')
            return resolve({
              kind: 'unanswered',
              error: 'timeout',
              detail: `no answer within ${options.timeoutMs} ms`,
              durationMs: elapsed(),
            });
          if (error instanceof AddressRefused)
            return resolve({ kind: 'unanswered', error: 'address', detail: error.message, durationMs: elapsed() });
          const code = (error as NodeJS.ErrnoException | undefined)?.code;
          resolve({
            kind: 'unanswered',
            error: 'connection',
            detail: code ?? error?.message ?? 'closed without an answer',
            durationMs: elapsed(),
          });
        }
        req.on('error', (error) => finish(error));
        req.on('upgrade', (_res, socket) => {
          socket.destroy();
          finish(new Error('answered 101 Switching Protocols'));
        });
        req.on('close', () => finish(new Error('closed without an answer')));
        req.end(message.body);
      });
    },
  };
}
export type WebhookClient = ReturnType<typeof createWebhookClient>;

import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { SimulatorTimers } from './server';

/**
 * Callback chaos, shared by the simulators that call the service back (mobile money, identity
 * verification, SMS). Set with a seed through a simulator's control API, it delivers every
 * callback the simulator would send once as a plan drawn for that callback says:
 *
 * - copies: 0, 1, 2 or 3 (weights `copies`);
 * - timing: at once; `shuffled` (held, then released with every other callback held in the same
 *   `windowMs`, in a seeded random order); or `late` (held until the simulator has answered a
 *   status query about the callback's request, which the simulator calls `queried`; after
 *   `lateMaxMs` when none comes, as for kinds whose protocol has no query);
 * - forged (chance `forged`): one forgery sent first, picked among those the simulator lists for
 *   the callback (what an attacker could send in that provider's protocol).
 *
 * `burst: n` replaces the plan: every callback goes n times at once, concurrently, genuine only
 * (the handlers suite: a run's signals arriving together).
 *
 * The n-th callback due gets the plan a hash of the seed and n gives, so the same seed and the
 * same workload deliver the same way. What was planned and what the receiver answered is kept
 * per callback (`records`) for the control API.
 */
const probability = z.number().min(0).max(1);
const weight = z.number().min(0).max(100);

export const ChaosSettings = z
  .strictObject({
    seed: z.number().int(),
    /** Relative weights of delivering a callback 0, 1, 2 and 3 times. */
    copies: z.tuple([weight, weight, weight, weight]).default([1, 4, 2, 1]),
    shuffled: probability.default(0.25),
    late: probability.default(0.25),
    forged: probability.default(0.3),
    windowMs: z.number().int().min(1).max(60_000).default(400),
    lateMaxMs: z.number().int().min(0).max(600_000).default(10_000),
    burst: z.number().int().min(1).max(50).optional(),
  })
  .refine((s) => s.copies.some((w) => w > 0), { message: 'at least one copies weight above 0', path: ['copies'] })
  .refine((s) => s.shuffled + s.late <= 1, { message: 'shuffled + late at most 1', path: ['late'] });
export type ChaosSettings = z.output<typeof ChaosSettings>;

export type ChaosTiming = 'prompt' | 'shuffled' | 'late';

export interface ChaosRecord {
  seq: number;
  kind: string;
  /** The request it reports on (a CheckoutRequestID, an OriginatorConversationID, a job id, a message id). */
  request: string;
  copies: number;
  timing: ChaosTiming;
  /** A late callback's release: after a status query about its request was answered, or after lateMaxMs without one. */
  released?: 'after_query' | 'no_query';
  forgery?: string;
  /** What the receiver answered each genuine copy (its HTTP status, or the error), in the order sent. */
  answers: (number | string)[];
  forgedAnswer?: number | string;
}

/** One callback as a simulator hands it over: how to send it, and how it may be forged. */
export interface ChaosCallback {
  kind: string;
  request: string;
  /** Sends one genuine copy; answers the receiver's HTTP status. */
  send(): Promise<number>;
  /** The forgeries this callback allows, by name, each sending one forged callback. */
  forgeries: Record<string, () => Promise<number>>;
}

interface Held {
  record: ChaosRecord;
  send: () => Promise<number>;
}

/** A uniform [0, 1) from the seed and labels: the same labels give the same number. */
function hashed(seed: number, ...labels: (string | number)[]): number {
  return (
    createHash('sha256')
      .update(`${seed}:${labels.join(':')}`)
      .digest()
      .readUInt32BE(0) /
    2 ** 32
  );
}

/** Records kept (the oldest forgotten first), so a long run stays bounded like the rest of a simulator. */
const MAX_RECORDS = 50_000;

export function callbackChaos(timers: SimulatorTimers) {
  let settings: ChaosSettings | null = null;
  let seq = 0;
  let batches = 0;
  let records: ChaosRecord[] = [];
  let pool: Held[] = [];
  let late = new Map<number, { request: string; held: Held[] }>();

  const answered = (send: () => Promise<number>) =>
    send().then(
      (status) => status,
      (error: unknown) => (error as Error).message,
    );
  async function sendAll(held: Held[]) {
    // One at a time: the receiver sees exactly this order.
    for (const { record, send } of held) record.answers.push(await answered(send));
  }

  function flushPool() {
    const due = pool;
    pool = [];
    const batch = ++batches;
    const order = due.map((held, i) => ({ held, key: hashed(settings?.seed ?? 0, 'batch', batch, i) }));
    void sendAll(order.sort((a, b) => a.key - b.key).map((o) => o.held));
  }

  function release(id: number, how: 'after_query' | 'no_query') {
    const entry = late.get(id);
    if (!entry) return;
    late.delete(id);
    for (const { record } of entry.held) record.released ??= how;
    void sendAll(entry.held);
  }

  return {
    get settings() {
      return settings;
    },
    /** New settings (or none: chaos off); what was held is dropped, the record starts over. */
    configure(next: ChaosSettings | null) {
      settings = next;
      seq = 0;
      batches = 0;
      records = [];
      pool = [];
      late = new Map();
    },
    records: () => records.map((r) => ({ ...r, answers: [...r.answers] })),

    /** Delivers one callback as its plan says (settings must be set). */
    async deliver(callback: ChaosCallback): Promise<void> {
      const s = settings!;
      const n = ++seq;
      if (s.burst) {
        const record: ChaosRecord = {
          seq: n,
          kind: callback.kind,
          request: callback.request,
          copies: s.burst,
          timing: 'prompt',
          answers: [],
        };
        records.push(record);
        if (records.length > MAX_RECORDS) records.shift();
        record.answers = await Promise.all(Array.from({ length: s.burst }, () => answered(callback.send)));
        return;
      }
      const u = (label: string) => hashed(s.seed, n, label);
      const total = s.copies.reduce((a, b) => a + b, 0);
      let pick = u('copies') * total;
      const copies = s.copies.findIndex((w) => (pick -= w) < 0);
      const t = u('timing');
      const timing: ChaosTiming = t < s.late ? 'late' : t < s.late + s.shuffled ? 'shuffled' : 'prompt';
      const names = Object.keys(callback.forgeries);
      const forgery =
        names.length > 0 && u('forged') < s.forged ? names[Math.floor(u('forgery') * names.length)] : undefined;
      const record: ChaosRecord = {
        seq: n,
        kind: callback.kind,
        request: callback.request,
        copies,
        timing,
        answers: [],
      };
      if (forgery) record.forgery = forgery;
      records.push(record);
      if (records.length > MAX_RECORDS) records.shift();

      // A forger races the provider: the forgery goes first.
      if (forgery) record.forgedAnswer = await answered(callback.forgeries[forgery]!);
      const held = Array.from({ length: copies }, () => ({ record, send: callback.send }));
      if (copies === 0) return;
      if (timing === 'prompt') return sendAll(held);
      if (timing === 'shuffled') {
        if (pool.length === 0) timers.later(s.windowMs, flushPool);
        pool.push(...held);
        return;
      }
      late.set(n, { request: callback.request, held });
      timers.later(s.lateMaxMs, () => release(n, 'no_query'));
    },

    /** A status query about `request` was answered: its late callbacks go now. */
    queried(request: string) {
      for (const [id, entry] of late) if (entry.request === request) timers.later(0, () => release(id, 'after_query'));
    },
  };
}
export type CallbackChaos = ReturnType<typeof callbackChaos>;

/**
 * The callback URL with its secret changed: the last path segment of 16 characters or more (the
 * unguessable token our callback URLs carry) replaced by random characters of the same length,
 * as someone who knows the address's shape but not its token would send.
 */
export function withWrongToken(url: string): string {
  const parsed = new URL(url);
  const segments = parsed.pathname.split('/');
  const index = segments.findLastIndex((segment) => segment.length >= 16);
  if (index < 0) return `${url}-forged`;
  const length = segments[index]!.length;
  segments[index] = randomBytes(length).toString('base64url').slice(0, length);
  parsed.pathname = segments.join('/');
  return parsed.toString();
}

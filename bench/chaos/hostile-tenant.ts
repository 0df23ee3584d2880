import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import type { Knex } from 'knex';
import { insertEndpoint } from '../../db/webhooks/endpoints';
import { newSecret } from '../../providers/webhooks/signature';

export interface HostileTenant {
  /**
   * Waits (up to `timeoutMs`) until the dispatcher has started what it starts of the tenant's
   * deliveries for now (some started, and no more for two seconds: the rest wait in Postgres
   * for its runs to make their attempts), then `firstAttemptsMs` for their first attempts.
   */
  started(timeoutMs: number, firstAttemptsMs: number): Promise<void>;
  /** How many of its deliveries have their run started. */
  startedCount(): Promise<number>;
  /** Attempts the dead receiver holds open now. */
  inFlight(): number;
  /** The most it held at once since the last call. */
  mostSinceLast(): number;
  close(): Promise<void>;
}

/**
 * Issue 54's hostile tenant: an organization's most endpoints, all at one receiver that accepts
 * connections and never answers, and `eventsPerEndpoint` events of `type` for each, written
 * through the outbox as its own state changes would be (so the dispatcher gives every endpoint a
 * delivery of each, as a full resend would). `snapshot`: a real event's, to render.
 */
export async function startHostileTenant(
  db: Knex,
  options: { organizationId: string; endpoints: number; eventsPerEndpoint: number; type: string; snapshot: unknown },
): Promise<HostileTenant> {
  const sockets = new Set<Socket>();
  let most = 0;
  const dead = createServer((socket) => {
    sockets.add(socket);
    most = Math.max(most, sockets.size);
    socket.resume(); // read what comes (and so see the sender close), answer nothing
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
  const { port } = dead.address() as { port: number };
  const ids: string[] = [];
  for (let i = 0; i < options.endpoints; i++) {
    const id = randomUUID();
    ids.push(id);
    await insertEndpoint(
      db,
      options.organizationId,
      {
        id,
        url: `http://127.0.0.1:${port}/hook/${i}`,
        description: 'hostile tenant',
        event_types: [options.type],
        enabled: true,
        secret: newSecret(),
      },
      Number.MAX_SAFE_INTEGER,
    );
  }
  const events = Array.from({ length: options.eventsPerEndpoint }, () => {
    const id = randomUUID();
    return {
      organization_id: options.organizationId,
      type: options.type,
      resource_id: id,
      change_key: `${id}@hostile`,
      snapshot: options.snapshot,
    };
  });
  await db.batchInsert('webhook_events', events, 500);
  const startedCount = async () => {
    const [row] = await db('webhook_deliveries')
      .where({ organization_id: options.organizationId })
      .whereIn('endpoint_id', ids)
      .whereNotNull('workflow_started_at')
      .count<{ n: string }[]>({ n: '*' });
    return Number(row!.n);
  };
  return {
    async started(timeoutMs, firstAttemptsMs) {
      const until = Date.now() + timeoutMs;
      let seen = -1;
      let steadySince = Date.now();
      while (Date.now() < until) {
        const now = await startedCount();
        if (now !== seen) [seen, steadySince] = [now, Date.now()];
        else if (now > 0 && Date.now() - steadySince >= 2_000) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      await new Promise((resolve) => setTimeout(resolve, firstAttemptsMs));
    },
    startedCount,
    inFlight: () => sockets.size,
    mostSinceLast() {
      const seen = most;
      most = sockets.size;
      return seen;
    },
    async close() {
      await db('webhook_endpoints').where({ organization_id: options.organizationId }).whereIn('id', ids).delete();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => dead.close(() => resolve()));
    },
  };
}

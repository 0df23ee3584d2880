/**
 * Attempts in flight in this worker, at most `perEndpoint` to one endpoint and `perOrganization`
 * for one organization: `take` answers a release, or which of them is full. With the
 * worker's WEBHOOK_ACTIVITY_SLOTS, the organization bound is each organization's share: one
 * tenant's receivers, however many and however dead, hold at most that many of the slots, and
 * every other tenant's deliveries find the rest.
 */
export class DeliverySlots {
  /** When each attempt in flight began, per endpoint and per organization. */
  private readonly endpoints = new Map<string, number[]>();
  private readonly organizations = new Map<string, number[]>();

  constructor(
    private readonly perEndpoint: number,
    private readonly perOrganization: number,
  ) {}

  /** A release, or which bound is full (`endpoint` first). */
  take(organizationId: string, endpointId: string, now = Date.now()): (() => void) | 'endpoint' | 'organization' {
    if ((this.endpoints.get(endpointId)?.length ?? 0) >= this.perEndpoint) return 'endpoint';
    if ((this.organizations.get(organizationId)?.length ?? 0) >= this.perOrganization) return 'organization';
    const add = (map: Map<string, number[]>, key: string) => {
      const starts = map.get(key) ?? [];
      starts.push(now);
      map.set(key, starts);
    };
    const remove = (map: Map<string, number[]>, key: string) => {
      const starts = map.get(key) ?? [];
      starts.splice(starts.indexOf(now), 1);
      if (starts.length === 0) map.delete(key);
    };
    add(this.endpoints, endpointId);
    add(this.organizations, organizationId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      remove(this.endpoints, endpointId);
      remove(this.organizations, organizationId);
    };
  }

  /** How long the oldest attempt in flight to the endpoint, or for the organization, has been under way. */
  oldestMs(bound: 'endpoint' | 'organization', id: string, now = Date.now()): number {
    const starts = (bound === 'endpoint' ? this.endpoints : this.organizations).get(id);
    return starts && starts.length > 0 ? now - Math.min(...starts) : 0;
  }
}

/**
 * Deliveries this worker turned away for want of a slot, per key (an endpoint, an organization),
 * each remembered for WINDOW_MS: how many are waiting for that key's slots. A delivery turned
 * away waits in proportion (its turn comes after theirs), so thousands of one tenant's deliveries
 * wake a few times a minute, not every second, and the task queue every tenant shares stays short.
 */
export class WaitingLines {
  private static readonly WINDOW_MS = 5 * 60_000;
  /** What an attempt is taken to last before one of the key's attempts was timed. */
  private static readonly UNTIMED_MS = 250;
  private readonly lines = new Map<string, Map<string, number>>();
  private sweptAt = 0;
  /** How long the key's attempts have lasted: a moving average (each new one weighs a fifth). */
  private readonly durations = new Map<string, number>();

  /** An attempt for `key` took `ms`. */
  timed(key: string, ms: number): void {
    const before = this.durations.get(key);
    this.durations.set(key, before === undefined ? ms : before * 0.8 + ms * 0.2);
    if (this.durations.size > 100_000) this.durations.clear();
  }

  /**
   * When a delivery `waiting`-th in the key's line might get one of its `slots`: the line over the
   * slots, each an attempt's time: as long as the key's attempts have lasted, and at least as long
   * as the oldest one under way has been (a receiver that stopped answering shows in that first).
   */
  turnMs(key: string, waiting: number, slots: number, underWayMs: number): number {
    return (waiting / slots) * Math.max(underWayMs, this.durations.get(key) ?? WaitingLines.UNTIMED_MS);
  }

  /** Notes that `deliveryId` waits for `key`; answers how many wait for it now. */
  wait(key: string, deliveryId: string, now: number): number {
    // Every minute, what was noted over the window ago goes (a delivery that moved to another
    // worker, or gave up, is never marked done here), and so do lines left empty.
    if (now - this.sweptAt > 60_000) {
      this.sweptAt = now;
      for (const [name, entries] of this.lines) {
        for (const [id, at] of entries) if (now - at > WaitingLines.WINDOW_MS) entries.delete(id);
        if (entries.size === 0) this.lines.delete(name);
      }
    }
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = new Map()));
    line.set(deliveryId, now);
    return line.size;
  }

  /** A delivery that got its slot no longer waits. */
  done(key: string, deliveryId: string): void {
    const line = this.lines.get(key);
    line?.delete(deliveryId);
    if (line?.size === 0) this.lines.delete(key);
  }
}

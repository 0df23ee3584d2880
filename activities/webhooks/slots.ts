/**
 * Attempts in flight per endpoint in this worker, at most `perEndpoint` each: `take` answers a
 * release, or undefined when the endpoint's slots are all taken.
 */
export class EndpointSlots {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly perEndpoint: number) {}

  take(endpointId: string): (() => void) | undefined {
    const taken = this.inFlight.get(endpointId) ?? 0;
    if (taken >= this.perEndpoint) return undefined;
    this.inFlight.set(endpointId, taken + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(endpointId) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(endpointId);
      else this.inFlight.set(endpointId, left);
    };
  }
}

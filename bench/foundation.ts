import { compare, measure, withServer } from './lib';

/**
 * The foundation's per-request cost: GET /healthz through the service's whole middleware stack
 * (request id, JSON access log, Prometheus metrics, error handling, router, validation) against
 * a bare Koa handler answering the same body, in the same run; then each middleware alone, to
 * show where the time goes. Issue 34 sets the stack's goal (0.8 of bare Koa); later benchmarks
 * (authenticated requests, STK push) include this cost.
 */
export async function foundationBench(): Promise<number> {
  return withServer<Record<string, string>, number>('foundation.ts', async (info) => {
    const ratio = await compare({
      title: 'API middleware stack: GET /healthz, service app vs bare Koa',
      baseline: { name: 'bare Koa, same JSON', url: info.bare! },
      candidate: { name: 'service app', url: info.service! },
      goal: 0.8, // issue 34
    });
    console.log('  where the time goes (each middleware alone, one 3s run each, vs bare):');
    const bare = await measure({ name: 'bare', url: info.bare! }, 16, 3);
    for (const [name, url] of Object.entries(info)) {
      if (name === 'bare') continue;
      const m = await measure({ name, url }, 16, 3);
      console.log(
        `    ${name.padEnd(24)} ${m.rps.toFixed(0).padStart(7)} req/s  ratio ${(m.rps / bare.rps).toFixed(2)}`,
      );
    }
    return ratio;
  });
}

if (require.main === module) void foundationBench();

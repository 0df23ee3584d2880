import { compare, measure, withServer } from './lib';

/**
 * GET /v1/kyc/applications/{id}/status on a fresh (not stale) application, authenticated,
 * against a bare Koa + pg `SELECT 1` route in the same run. Goal: at least 0.6.
 */
export async function kycStatusBench(): Promise<number> {
  return withServer<Record<string, string>, number>('auth.ts', async (info) => {
    const auth = { Authorization: `Bearer ${info.token}` };
    const ratio = await compare({
      title: 'GET /v1/kyc/applications/{id}/status (fresh, authenticated) vs bare Koa + pg SELECT 1',
      baseline: { name: 'bare Koa + pg SELECT 1', url: info.baseline! },
      candidate: { name: 'KYC status (JWT, caller, application read)', url: info.kycStatus!, headers: auth },
      goal: 0.6,
    });
    console.log('  where the time goes:');
    const bare = await measure({ name: 'baseline', url: info.baseline! }, 16, 3);
    for (const [name, url] of [
      ['whoami (auth and rate limits only, no read)', info.service!],
      ['status with in-process rate-limit counters', info.kycStatusMemory!],
      ['status as production runs it', info.kycStatus!],
    ] as const) {
      const m = await measure({ name, url, headers: auth }, 16, 3);
      console.log(
        `    ${name.padEnd(46)} ${m.rps.toFixed(0).padStart(6)} req/s  ratio ${(m.rps / bare.rps).toFixed(2)}  p50 ${m.p50} ms`,
      );
    }
    return ratio;
  });
}

if (require.main === module) void kycStatusBench();

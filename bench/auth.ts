import { jwtVerify, createRemoteJWKSet, decodeJwt } from 'jose';
import { compare, measure, withServer } from './lib';

/**
 * An authenticated request (bearer JWT verified against the JWKS, caller resolved) to a cheap
 * route, against a bare Koa + pg `SELECT 1` route in the same run. Goal: at least 0.8.
 */
export async function authBench(): Promise<number> {
  return withServer<Record<string, string>, number>('auth.ts', async (info) => {
    const auth = { Authorization: `Bearer ${info.token}` };
    const ratio = await compare({
      title: 'Authenticated GET /v1/auth/whoami vs bare Koa + pg SELECT 1',
      baseline: { name: 'bare Koa + pg SELECT 1', url: info.baseline! },
      candidate: { name: 'whoami (JWT, caller, Postgres rate limits)', url: info.service!, headers: auth },
      goal: 0.8,
    });
    console.log('  where the time goes:');
    const bare = await measure({ name: 'baseline', url: info.baseline! }, 16, 3);
    const memory = await measure({ name: 'memory', url: info['service-memory']!, headers: auth }, 16, 3);
    const full = await measure({ name: 'full', url: info.service!, headers: auth }, 16, 3);
    console.log(`    baseline                              ${bare.rps.toFixed(0).padStart(7)} req/s`);
    console.log(
      `    whoami, in-process rate-limit counters ${memory.rps.toFixed(0).padStart(6)} req/s  ratio ${(memory.rps / bare.rps).toFixed(2)}`,
    );
    console.log(
      `    whoami, Postgres rate-limit counters   ${full.rps.toFixed(0).padStart(6)} req/s  ratio ${(full.rps / bare.rps).toFixed(2)}`,
    );
    // The signature check alone, in this process: the fixed CPU price of every authenticated request.
    const jwks = createRemoteJWKSet(new URL(`${decodeJwt(info.token!).iss}/.well-known/jwks.json`));
    const options = { algorithms: ['RS256'] };
    for (let i = 0; i < 200; i++) await jwtVerify(info.token!, jwks, options);
    const started = process.hrtime.bigint();
    for (let i = 0; i < 2000; i++) await jwtVerify(info.token!, jwks, options);
    const micros = Number(process.hrtime.bigint() - started) / 2000 / 1000;
    console.log(`    RS256 verification alone: ${micros.toFixed(0)} µs per token (one core)`);
    return ratio;
  });
}

if (require.main === module) void authBench();

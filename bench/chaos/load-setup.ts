import { pidsMatching } from '../lib';
import { type ChaosDeployment, startChaosDeployment } from './deployment';
import { openLoopMix, type RunFigures } from './load-driver';
import { LoadMix } from './load-mix';
import { type Population, preparePopulation } from './load-population';
import { ownProcesses } from './load-processes';
import { MEMORY_PROBE_ARGS } from './memory';
import { seeded } from './random';

export interface LoadSetup {
  deployment: ChaosDeployment;
  population: Population;
  mix: LoadMix;
  /** The mix at `rate` requests a second for `seconds`, open loop. */
  load(rate: number, seconds: number): Promise<RunFigures>;
  /** The pids of the API and the worker (each started with the memory probe). */
  services: { API: number; worker: number };
  /** Process groups whose CPU the suite reports. */
  cpuGroups: Record<string, () => number[]>;
}

/**
 * The deployment (deployment.ts: API, one worker, the simulators, Postgres, Temporal, each its own
 * process), the API and the worker started with the memory probe, and the population prepared.
 */
export async function setUpLoad(options: {
  seed: number;
  borrowers: number;
  prospects: number;
  cleanups: (() => Promise<unknown>)[];
}): Promise<LoadSetup> {
  const deployment = await withNodeArgs(MEMORY_PROBE_ARGS, () =>
    startChaosDeployment({ workers: 1, taskQueue: 'chaos-load', cleanups: options.cleanups }),
  );
  const service = (entry: string) => {
    const [pid, ...others] = ownProcesses(entry);
    if (pid === undefined || others.length > 0) throw new Error(`expected one ${entry} process of this suite`);
    return pid;
  };
  const services = { API: service('api/server.ts'), worker: service('worker/main.ts') };
  const population = await preparePopulation({
    db: deployment.db,
    apiUrl: deployment.apiUrl,
    temporal: deployment.temporal,
    token: (userId) => deployment.token(userId),
    borrowers: options.borrowers,
    prospects: options.prospects,
  });
  const mix = new LoadMix(population, seeded(options.seed));
  const databaseName = new URL(deployment.databaseUrl).pathname.slice(1);
  return {
    deployment,
    population,
    mix,
    load: (rate, seconds) =>
      openLoopMix({
        apiUrl: deployment.apiUrl,
        rate,
        seconds,
        draw: () => mix.draw(),
        answered: (request, status, body) => {
          if (status === 201) mix.pushed(request, body);
        },
      }),
    services,
    cpuGroups: {
      API: () => [services.API],
      worker: () => [services.worker],
      'Postgres (this database)': () => pidsMatching(` ${databaseName} `),
      'Temporal server': () => ownProcesses('start-dev'),
      simulators: () => ownProcesses('simulator.ts'),
      'load generator': () => [process.pid],
    },
  };
}

/**
 * Runs `start` with `args` added to the node flags of the service processes it starts (startService
 * reads BENCH_NODE_ARGS when it spawns), and restores them afterwards.
 */
async function withNodeArgs<T>(args: string[], start: () => Promise<T>): Promise<T> {
  const before = process.env.BENCH_NODE_ARGS;
  process.env.BENCH_NODE_ARGS = [before ?? '', ...args].join(' ').trim();
  try {
    return await start();
  } finally {
    if (before === undefined) delete process.env.BENCH_NODE_ARGS;
    else process.env.BENCH_NODE_ARGS = before;
  }
}

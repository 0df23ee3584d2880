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
  /** The pids of the API and the worker (each started with the memory probe; in the cluster, the first of each). */
  services: { API: number; worker: number };
  /** Process groups whose CPU the suite reports. */
  cpuGroups: Record<string, () => number[]>;
}

/**
 * The deployment (deployment.ts: API, one worker, the simulators, Postgres, Temporal, each its own
 * process), the API and the worker started with the memory probe, and the population prepared.
 * `cluster`: the production topology (deployment.ts), CPU summed over each kind's instances.
 */
export async function setUpLoad(options: {
  seed: number;
  borrowers: number;
  prospects: number;
  cluster?: boolean;
  cleanups: (() => Promise<unknown>)[];
}): Promise<LoadSetup> {
  const deployment = await withNodeArgs(MEMORY_PROBE_ARGS, () =>
    startChaosDeployment({ workers: 1, taskQueue: 'chaos-load', cluster: options.cluster, cleanups: options.cleanups }),
  );
  const service = (entry: string, count: number) => {
    const pids = ownProcesses(entry);
    if (pids.length !== count) throw new Error(`expected ${count} ${entry} processes of this suite`);
    return Math.min(...pids);
  };
  const services = {
    API: service('api/server.ts', deployment.apis.size),
    worker: service('worker/main.ts', deployment.workers.size),
  };
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
      API: () => ownProcesses('api/server.ts'),
      worker: () => ownProcesses('worker/main.ts'),
      'Postgres (this database)': () => pidsMatching(` ${databaseName} `),
      'Temporal server': () => [...ownProcesses('start-dev'), ...ownProcesses('temporal-server')],
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

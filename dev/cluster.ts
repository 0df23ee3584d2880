import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../config';
import { createLogger } from '../config/logger';
import { seedDemoData } from '../db/seeds/demo';
import { requestToken } from '../simulators/identity';
import { bundleWorkflows } from '../worker/bundle';
import { type DevConfig, loadDevConfig } from './config';
import { serviceSigningKey } from './identity';
import { watchParent } from './parent-watch';
import { stageDemoCustomers } from './seed-stages';
import { startRoundRobin } from './round-robin';
import { openDatabase, type Say, startProviders, type Stops, stopStack } from './stack';
import { findTemporalUi, preparedTemporalServer, startTemporalUi, TEMPORAL_SERVER_VERSION } from './temporal-postgres';

const ROOT = path.resolve(__dirname, '..');

/**
 * The settings the providers pointed elsewhere (simulator URLs, credentials, the development
 * identity provider), as the environment strings a process of its own reads them from.
 */
export function changedSettings(before: DevConfig, after: DevConfig): Record<string, string> {
  const changed: Record<string, string> = {};
  for (const [key, value] of Object.entries(after)) {
    if (value === undefined || value === before[key as keyof DevConfig]) continue;
    // Lists of words are comma-separated settings; anything else structured (issuers) is JSON.
    changed[key] = Array.isArray(value)
      ? value.every((item) => typeof item === 'string')
        ? value.join(',')
        : JSON.stringify(value)
      : String(value);
  }
  return changed;
}

/** One production entry point (api/server.ts, worker/main.ts) as a process, its log in `logFile`; resolves once `ready` is logged. */
export async function startMember(entry: string, env: NodeJS.ProcessEnv, ready: RegExp, logFile: string) {
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), path.join(ROOT, entry)], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile);
  child.stderr.pipe(log);
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      log.write(chunk);
      seen = (seen + chunk.toString()).slice(-10_000);
      if (ready.test(seen)) resolve();
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${entry} exited (${code}) before it was ready; see ${logFile}`)));
  });
  return child;
}

const stopChild = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await gone;
};

/** The Temporal server on the stack's Postgres (its own two databases), schemas brought up to date first. */
async function temporalOnPostgres(config: DevConfig, databaseUrl: string, say: Say, stops: Stops) {
  const prepared = await preparedTemporalServer(databaseUrl, 'lending_temporal', say);
  const server = await prepared.start({ port: config.TEMPORAL_SERVER_PORT, namespace: config.TEMPORAL_NAMESPACE });
  stops.push(() => server.stop());
  // Its Web UI, as compose's temporal-ui service (built with Go like the server).
  const uiBinary = await findTemporalUi(say);
  const ui = uiBinary
    ? await startTemporalUi({ binary: uiBinary, temporalAddress: server.address, port: config.TEMPORAL_UI_PORT })
    : undefined;
  if (ui) stops.push(() => ui.stop());
  return { ...server, uiUrl: ui?.url };
}

/**
 * `npm run cluster`: the production topology on this machine. Postgres (DATABASE_URL, or the
 * embedded one), the real Temporal server on it (dev/temporal-postgres.ts), the simulators,
 * CLUSTER_API_INSTANCES API processes behind a round-robin proxy on PORT, and
 * CLUSTER_WORKER_INSTANCES worker processes, each process as deployed (api/server.ts,
 * worker/main.ts) with its log under DATA_DIR/cluster/. SIGINT or SIGTERM stops it all.
 */
async function main() {
  const base = loadDevConfig({ ...process.env, DATA_DIR: process.env.DATA_DIR ?? '.data/cluster' });
  const logger = createLogger(base.LOG_LEVEL);
  const say = (line: string) => console.log(line);
  const stops = stopStack(logger, say);
  process.on('SIGINT', () => stops.shutdown('SIGINT received'));
  process.on('SIGTERM', () => stops.shutdown('SIGTERM received'));
  watchParent(() => stops.shutdown('parent process exited'));
  try {
    const logs = path.resolve(base.DATA_DIR, 'logs');
    await mkdir(logs, { recursive: true });
    const { providersDev, config } = await startProviders(base, say, stops);
    const { db, databaseUrl } = await openDatabase(config, logger, stops);
    await seedDemoData(db, providersDev.seedOptions);
    const temporal = await temporalOnPostgres(config, databaseUrl!, say, stops);
    const bundle = path.resolve(base.DATA_DIR, 'workflow-bundle.js');
    await writeFile(bundle, (await bundleWorkflows()).code);

    const publicUrl = config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...changedSettings(base, config),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      PUBLIC_BASE_URL: publicUrl,
      SERVICE_SIGNING_KEY: await serviceSigningKey(config, path.join(base.DATA_DIR, 'service-signing-key.json')),
      WORKFLOW_BUNDLE_PATH: bundle,
      // Behind the proxy: the client's address is the one X-Forwarded-For carries.
      TRUST_PROXY: 'true',
      TRUST_PROXY_HOPS: '1',
    };
    const workers = await Promise.all(
      Array.from({ length: base.CLUSTER_WORKER_INSTANCES }, (_, i) =>
        startMember(
          'worker/main.ts',
          { ...env, WORKER_METRICS_PORT: String(base.WORKER_METRICS_PORT + i) },
          /worker running/,
          path.join(logs, `worker-${i + 1}.log`),
        ),
      ),
    );
    stops.push(() => Promise.all(workers.map(stopChild)));
    const apiPorts = Array.from({ length: base.CLUSTER_API_INSTANCES }, (_, i) => base.PORT + 1 + i);
    const apis = await Promise.all(
      apiPorts.map((port, i) =>
        startMember(
          'api/server.ts',
          { ...env, PORT: String(port) },
          /api listening/,
          path.join(logs, `api-${i + 1}.log`),
        ),
      ),
    );
    stops.push(() => Promise.all(apis.map(stopChild)));
    const proxy = await startRoundRobin(
      () => apiPorts.map((port) => `http://${config.HOST}:${port}`),
      config.HOST,
      config.PORT,
    );
    stops.push(() => proxy.close());

    say(`API            ${proxy.url}  (round robin over ${apiPorts.map((p) => `:${p}`).join(', ')})`);
    say(
      `Temporal       ${temporal.address}  (server ${TEMPORAL_SERVER_VERSION} on PostgreSQL; temporal --address ${temporal.address})`,
    );
    if (temporal.uiUrl) say(`Temporal UI    ${temporal.uiUrl}`);
    say(`Workers        ${workers.length}, metrics from :${base.WORKER_METRICS_PORT}`);
    say(`Identity (dev) ${providersDev.idp.url}  (npm run --silent token -- --user <id or e-mail>)`);
    say(`Logs           ${logs}`);
    // The demo customers at their stages, through the proxy, as npm start does (a convenience).
    if (providersDev.sms && providersDev.bank && providersDev.kyc)
      await stageDemoCustomers(db, {
        apiUrl: proxy.url,
        smsUrl: providersDev.sms.url,
        tokenFor: (sub) => requestToken(providersDev.idp.url, 'backend', { sub, aud: config.AUTH_AUDIENCE }),
      }).then(
        () => say('Demo customers one at each stage: new, kyc-approved, active  (npm run --silent seed:ids)'),
        (error: unknown) => say(`Demo customers not all at their stages (${String(error)})`),
      );
    say('ready (Ctrl-C stops everything)');
    // A member that dies on its own takes the cluster down, as a crashed npm start does.
    await Promise.race([...apis, ...workers].map((child) => new Promise((resolve) => child.once('exit', resolve))));
    if (!stops.stopping) throw new Error('a cluster process exited unexpectedly (see its log)');
  } catch (error) {
    if (stops.stopping) return;
    console.error(error instanceof ConfigError ? error.message : error);
    await stops.stopAll();
    process.exit(1);
  }
}

if (require.main === module) void main();

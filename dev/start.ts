import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { buildApp } from '../api/app';
import { loadServiceKeys } from '../api/auth/service-keys';
import { startApi } from '../api/server';
import { ConfigError } from '../config';
import { createLogger } from '../config/logger';
import { temporalConnectionOptions } from '../config/temporal';
import { DEMO, seedDemoData } from '../db/seeds/demo';
import { systemClock } from '../domain/clock';
import { createProviders } from '../providers';
import { requestToken } from '../simulators/identity';
import { simulatorCertificate } from '../simulators/server';
import { bundleWorkflows } from '../worker/bundle';
import { installRuntime } from '../worker/runtime';
import { ensureSchedules } from '../worker/schedules/index';
import { createWorker } from '../worker/worker';
import { type DevConfig, loadDevConfig } from './config';
import { serviceSigningKey } from './identity';
import { stageDemoCustomers } from './seed-stages';
import { watchParent } from './parent-watch';
import { openDatabase, type Say, startProviders, type Stops, stopStack } from './stack';
import { type DevelopmentProviders } from './simulators';
import { startTemporalDevServer } from './temporal-server';
import { registerDevelopmentReceiver } from './webhooks';

/** Temporal's address: TEMPORAL_ADDRESS, else a dev server's (with its Web UI) started here. */
async function temporalServer(config: DevConfig, say: Say, stops: Stops): Promise<{ address: string; ui: boolean }> {
  if (config.TEMPORAL_ADDRESS) return { address: config.TEMPORAL_ADDRESS, ui: false };
  const devServer = await startTemporalDevServer({
    cliPath: config.TEMPORAL_CLI_PATH,
    namespace: config.TEMPORAL_NAMESPACE,
    port: config.TEMPORAL_DEV_PORT,
    uiPort: config.TEMPORAL_UI_PORT,
    dbFilename: path.resolve(config.DATA_DIR, 'temporal.db'),
    log: say,
  });
  stops.push(() => devServer.teardown());
  return { address: `127.0.0.1:${config.TEMPORAL_DEV_PORT}`, ui: true };
}

/** Where everything is, and the certificates client SDKs need, written under DATA_DIR. */
async function announce(
  config: DevConfig,
  apiUrl: string,
  temporalUi: boolean,
  providersDev: DevelopmentProviders,
  say: Say,
): Promise<void> {
  say(`API            ${apiUrl}`);
  say(`API reference  ${apiUrl}/docs`);
  if (temporalUi) say(`Temporal UI    http://127.0.0.1:${config.TEMPORAL_UI_PORT}`);
  say(`Identity (dev) ${providersDev.idp.url}  (npm run --silent token -- --user <id or e-mail>)`);
  // Client SDKs force https: they trust the simulators' TLS certificate (NODE_EXTRA_CA_CERTS).
  const tlsCertificate = path.join(config.DATA_DIR, 'simulator-ca.pem');
  if (providersDev.kyc || providersDev.mobileMoney) await writeFile(tlsCertificate, simulatorCertificate().cert);
  if (providersDev.kyc) say(`KYC provider   ${providersDev.kyc.url}, ${providersDev.kyc.tlsUrl}  (simulator)`);
  if (providersDev.mobileMoney) {
    // The certificate B2C clients encrypt the initiator password with (mpesa-node certPath).
    const credentialCertificate = path.join(config.DATA_DIR, 'mobile-money-simulator.cer');
    await writeFile(credentialCertificate, providersDev.mobileMoney.certificate);
    say(
      `Mobile money   ${providersDev.mobileMoney.url}, ${providersDev.mobileMoney.tlsUrl}  (simulator; B2C certificate ${credentialCertificate})`,
    );
  }
  if (providersDev.kyc || providersDev.mobileMoney) say(`TLS trust      NODE_EXTRA_CA_CERTS=${tlsCertificate}`);
  // What was texted or e-mailed (codes, links) is read from their control APIs in development.
  if (providersDev.sms)
    say(`SMS gateway    ${providersDev.sms.url}  (simulator; sent: ${providersDev.sms.url}/_control/messages)`);
  if (providersDev.email)
    say(`E-mail         ${providersDev.email.url}  (simulator; sent: ${providersDev.email.url}/_control/messages)`);
  if (providersDev.bank) say(`Bank           ${providersDev.bank.url}  (simulator)`);
  if (providersDev.objectStore)
    say(`Object store   ${providersDev.objectStore.endpoint}  (versitygw; bucket ${config.OBJECT_STORE_BUCKET})`);
  if (providersDev.extraction)
    say(
      `Extraction     ${providersDev.extraction.url}  (invoice-extraction simulator; analyses: ${providersDev.extraction.url}/_control/analyses)`,
    );
}

/**
 * `npm start`: the whole service in one process with embedded defaults. Postgres (embedded
 * unless DATABASE_URL), a Temporal dev server with its Web UI (unless TEMPORAL_ADDRESS), both
 * persisted under DATA_DIR; then migrations, demo data, the worker and the API. SIGINT or
 * SIGTERM, or the death of the parent process (npm, tsx), stops everything in reverse order; a
 * second start reuses the data.
 */
async function main() {
  let config = loadDevConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const say = (line: string) => console.log(line);
  const stops = stopStack(logger, say);
  const onSignal = (signal: NodeJS.Signals) => stops.shutdown(`${signal} received`);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  watchParent(() => stops.shutdown('parent process exited'));

  try {
    // The SDK runtime serves the worker's metrics and leaves signal handling to us.
    installRuntime({ logger, shutdownSignals: [], metricsBindAddress: `127.0.0.1:${config.WORKER_METRICS_PORT}` });

    const started = await startProviders(config, say, stops);
    const { providersDev } = started;
    config = started.config;
    const serviceKeys = await loadServiceKeys(
      await serviceSigningKey(config, path.join(config.DATA_DIR, 'service-signing-key.json')),
    );

    const { db } = await openDatabase(config, logger, stops);
    await seedDemoData(db, providersDev.seedOptions);
    const receiverUrl = await registerDevelopmentReceiver(
      db,
      DEMO.organizations.demo.id,
      providersDev.webhookReceiver,
      systemClock.now(),
    );

    const temporalAt = await temporalServer(config, say, stops);
    const connection = await Connection.connect(temporalConnectionOptions(config, temporalAt.address));
    stops.push(() => connection.close());
    const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    await ensureSchedules(temporal, config);

    const nativeConnection = await NativeConnection.connect({ address: temporalAt.address });
    stops.push(() => nativeConnection.close());
    const providers = createProviders(config);
    const worker = await createWorker(
      {
        connection: nativeConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowBundle: await bundleWorkflows(),
        shutdownGraceTimeMs: config.WORKER_SHUTDOWN_GRACE,
      },
      { config, db, providers, logger, clock: systemClock, temporal },
    );
    const running = worker.run();
    stops.push(async () => {
      worker.shutdown();
      await running;
    });

    const api = await startApi(
      buildApp({ config, db, temporal, providers, logger, clock: systemClock, serviceKeys }),
      config.HOST,
      config.PORT,
    );
    stops.push(() => api.close());

    await announce(config, api.url, temporalAt.ui, providersDev, say);
    say(
      `Webhooks       ${receiverUrl}  (receiver simulator for the demo organization; received: ${providersDev.webhookReceiver.url}/_control/deliveries)`,
    );
    // The demo customers at their stages (npm run --silent seed:ids names them), through the API.
    // A failure leaves the service up: the demo customers are a convenience, not the service.
    if (providersDev.sms && providersDev.bank && providersDev.kyc) {
      await stageDemoCustomers(db, {
        apiUrl: api.url,
        smsUrl: providersDev.sms.url,
        tokenFor: (sub) => requestToken(providersDev.idp.url, 'backend', { sub, aud: config.AUTH_AUDIENCE }),
      }).then(
        () => say('Demo customers one at each stage: new, kyc-approved, active  (npm run --silent seed:ids)'),
        (error: unknown) =>
          say(`Demo customers not all at their stages (${String(error)}); the next start tries again`),
      );
    }
    say('ready (Ctrl-C stops everything)');
    await running; // a worker that dies on its own takes the service down with it
    if (!stops.stopping) throw new Error('worker stopped unexpectedly');
  } catch (error) {
    if (stops.stopping) return;
    console.error(error instanceof ConfigError ? error.message : error);
    await stops.stopAll();
    process.exit(1);
  }
}

void main();

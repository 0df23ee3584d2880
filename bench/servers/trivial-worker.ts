import { NativeConnection, Worker } from '@temporalio/worker';

/**
 * A worker running only the bare baseline workflow (bench/workflows/trivial.ts), in a process of
 * its own like the service's worker. TEMPORAL_ADDRESS and TEMPORAL_TASK_QUEUE from the
 * environment; prints `{"ready":true}` once polling.
 */
async function main() {
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const worker = await Worker.create({ connection, taskQueue: process.env.TEMPORAL_TASK_QUEUE!, workflowsPath: require.resolve('../workflows/trivial') });
  process.once('SIGTERM', () => worker.shutdown());
  const running = worker.run();
  console.log(JSON.stringify({ ready: true }));
  await running;
  await connection.close();
}
void main();

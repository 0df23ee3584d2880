import { Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { goSignal } from '../workflows/trivial';

/**
 * A worker running only the baseline workflows (bench/workflows/trivial.ts) and their activities,
 * in a process of its own like the service's worker. TEMPORAL_ADDRESS and TEMPORAL_TASK_QUEUE
 * from the environment; prints `{"ready":true}` once polling.
 */
async function main() {
  const address = process.env.TEMPORAL_ADDRESS!;
  const connection = await NativeConnection.connect({ address });
  const client = new Client({ connection: await Connection.connect({ address }) });
  const activities = {
    /** The push stand-in: its "callback" is the run's signal, sent while the activity runs. */
    async push(): Promise<void> {
      await client.workflow.getHandle(Context.current().info.workflowExecution!.workflowId).signal(goSignal);
    },
    async settle(): Promise<void> {},
  };
  const worker = await Worker.create({
    connection,
    taskQueue: process.env.TEMPORAL_TASK_QUEUE!,
    workflowsPath: require.resolve('../workflows/trivial'),
    activities,
  });
  process.once('SIGTERM', () => worker.shutdown());
  const running = worker.run();
  console.log(JSON.stringify({ ready: true }));
  await running;
  await connection.close();
}
void main();

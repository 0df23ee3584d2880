import { Client, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Config } from './index';

/**
 * The options of a grpc-js Temporal connection (the replay tool's): reconnecting after an outage
 * is retried at least every TEMPORAL_RECONNECT_BACKOFF_MAX, so the process notices a restarted
 * Temporal within that. (Native connections, connectClient's, reconnect on their own schedule.)
 */
export function temporalConnectionOptions(
  config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_RECONNECT_BACKOFF_MAX'>,
  address = config.TEMPORAL_ADDRESS ?? 'localhost:7233',
): ConnectionOptions {
  return { address, channelArgs: { 'grpc.max_reconnect_backoff_ms': config.TEMPORAL_RECONNECT_BACKOFF_MAX } };
}

/**
 * The Temporal client of the API and of the worker's activities, on a native connection (the
 * SDK's Rust core, as the worker polls with; the worker's activities share the worker's). A start or a signal
 * costs the calling process about half the CPU it costs on @temporalio/client's grpc-js
 * Connection (measured here: 1.2–1.6 against 2.2–2.8 ms a start, 0.7 against 1.2–1.5 ms a
 * signal; README, Benchmarks), and every push is a start and a signal. The SDK runtime must be
 * installed first (worker/runtime.ts). Closing the client's connection is the caller's.
 */
export async function connectClient(
  config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>,
  address = config.TEMPORAL_ADDRESS ?? 'localhost:7233',
): Promise<Client> {
  return new Client({ connection: await NativeConnection.connect({ address }), namespace: config.TEMPORAL_NAMESPACE });
}

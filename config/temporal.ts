import type { ConnectionOptions } from '@temporalio/client';
import type { Config } from './index';

/**
 * The options of every Temporal client connection a process opens (the API's, the worker's own
 * client): reconnecting after an outage is retried at least every TEMPORAL_RECONNECT_BACKOFF_MAX,
 * so the process notices a restarted Temporal within that. (The worker's native connection
 * reconnects on its own schedule.)
 */
export function temporalConnectionOptions(
  config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_RECONNECT_BACKOFF_MAX'>,
  address = config.TEMPORAL_ADDRESS ?? 'localhost:7233',
): ConnectionOptions {
  return { address, channelArgs: { 'grpc.max_reconnect_backoff_ms': config.TEMPORAL_RECONNECT_BACKOFF_MAX } };
}

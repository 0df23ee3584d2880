import { DefaultLogger, type LogLevel, Runtime } from '@temporalio/worker';
import type { Logger } from '../config/logger';

const TEMPORAL_LEVEL: Record<string, LogLevel> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
};

/**
 * Installs the Temporal SDK runtime of this process (once, before any worker or native
 * connection): its logs go through our JSON logger, and its own metrics are served for
 * Prometheus when a bind address is given.
 */
export function installRuntime(options: {
  logger: Logger;
  metricsBindAddress?: string;
  /** Signals the SDK turns into worker shutdown; [] when the process orchestrates shutdown itself. */
  shutdownSignals?: NodeJS.Signals[];
}): void {
  const { logger } = options;
  const level = TEMPORAL_LEVEL[logger.level] ?? 'ERROR';
  Runtime.install({
    logger: new DefaultLogger(level, ({ level: entryLevel, message, meta }) => {
      const method =
        entryLevel === 'TRACE' ? 'trace' : (entryLevel.toLowerCase() as 'debug' | 'info' | 'warn' | 'error');
      logger[method]({ temporal: meta }, message);
    }),
    ...(options.shutdownSignals ? { shutdownSignals: options.shutdownSignals } : {}),
    ...(options.metricsBindAddress
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: options.metricsBindAddress } } } }
      : {}),
  });
}

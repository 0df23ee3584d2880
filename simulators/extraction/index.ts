import { SimulatorTimers, startSimulatorServer } from '../server';
import { providerApi } from './api';
import { simulatorControl } from './control';
import {
  DEFAULT_MAX_DOCUMENT_BYTES,
  DEFAULT_SOURCE_TIMEOUT_MS,
  type ExtractionSimulatorOptions,
  type RunningExtractionSimulator,
} from './model';
import { createAnalysisStore } from './store';

export type {
  DocumentFormat,
  ExtractionSimulatorOptions,
  RunningExtractionSimulator,
  SimulatedAnalysis,
} from './model';
export { MAX_ANALYSES } from './model';
export { formatOf, readDocument } from './ocr';

/**
 * Starts the invoice-extraction simulator (see ./model.ts for what it refuses, how it reads a
 * document and its control API): the analyses (./store.ts), the provider's API (./api.ts, its
 * checks in ./requests.ts) and the control API (./control.ts) on one server.
 */
export async function startExtractionSimulator(
  options: ExtractionSimulatorOptions,
): Promise<RunningExtractionSimulator> {
  const timers = new SimulatorTimers();
  const store = createAnalysisStore(() => modes.current.processingMs);
  const { control, modes } = simulatorControl(store, timers, options.processingMs ?? 300);
  const { before, readBody, api } = providerApi({
    apiKey: options.apiKey,
    limits: {
      maxDocumentBytes: options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES,
      sourceTimeoutMs: options.sourceTimeoutMs ?? DEFAULT_SOURCE_TIMEOUT_MS,
    },
    store,
    modes,
    timers,
  });
  const server = await startSimulatorServer({ port: options.port, timers, before, bodyParser: readBody, control, api });
  return { url: server.url, analyses: () => store.list(), close: () => server.close() };
}

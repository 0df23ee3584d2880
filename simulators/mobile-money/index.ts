import { bodyParser } from '@koa/bodyparser';
import { startSimulatorServer } from '../server';
import { providerApi } from './api';
import { reject } from './checks';
import { simulatorCallbacks } from './callbacks';
import { simulatorControl } from './control';
import { BAD_REQUEST, type MobileMoneySimulatorOptions, type RunningMobileMoneySimulator } from './model';
import { createSimulatorState } from './state';

export type {
  CallbackMode,
  MobileMoneySimulatorOptions,
  RunningMobileMoneySimulator,
  SentCallback,
  SimulatedPayment,
  SimulatedPush,
  SimulatedStatusQuery,
  SimulatorMode,
} from './model';

/** Starts the mobile-money simulator (see ./model.ts for what it does and its outcome table). */
export async function startMobileMoneySimulator(
  options: MobileMoneySimulatorOptions,
): Promise<RunningMobileMoneySimulator> {
  const state = createSimulatorState(options);
  const callbacks = simulatorCallbacks(state);
  const { control, controlApi } = simulatorControl(state, callbacks);
  const server = await startSimulatorServer({
    port: options.port,
    tls: { port: options.tlsPort },
    timers: state.timers,
    before: [
      // Every refusal in the provider's envelope, unknown paths and unreadable JSON included.
      async (ctx, next) => {
        try {
          await next();
          if (ctx.status === 404 && ctx.body === undefined) reject(ctx, 404, '404.001.01', 'Resource not found');
        } catch (error) {
          const status = (error as { status?: number }).status ?? 500;
          if (status === 400) reject(ctx, 400, BAD_REQUEST, 'Bad Request - Invalid JSON');
          else reject(ctx, status, '500.003.1001', 'Internal Server Error');
        }
      },
    ],
    bodyParser: bodyParser({ enableTypes: ['json'] }),
    control: controlApi,
    api: providerApi(state, callbacks),
  });
  return {
    url: server.url,
    tlsUrl: server.tlsUrl!,
    certificate: state.credentials.certificate,
    control,
    close: () => server.close(),
  };
}

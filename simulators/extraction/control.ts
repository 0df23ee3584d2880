import type Router from '@koa/router';
import { controlRouter, faultModes, type SimulatorTimers } from '../server';
import { Mode, type SimulatorMode } from './model';
import type { AnalysisStore } from './store';

/**
 * The control API tests drive the simulator with (/_control): the fault modes and processing time
 * (GET and PATCH /mode), reset (POST /reset: the defaults back, every analysis and pending timer
 * forgotten), and the analyses received (GET /analyses, `?sha256=` for one document's).
 */
export function simulatorControl(
  store: AnalysisStore,
  timers: SimulatorTimers,
  processingMs: number,
): { control: Router; modes: { readonly current: SimulatorMode } } {
  const control = controlRouter();
  const modes = faultModes<SimulatorMode>(control, Mode, { analyze: 'normal', result: 'normal', processingMs }, () => {
    timers.clear();
    store.clear();
  });
  control.get('/analyses', (ctx) => {
    const sha256 = typeof ctx.query.sha256 === 'string' ? ctx.query.sha256 : undefined;
    ctx.body = store.list().filter((a) => sha256 === undefined || a.sha256 === sha256);
  });
  return { control, modes };
}

import { condition, defineSignal, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export const goSignal = defineSignal('go');
export const pokeUpdate = defineUpdate<{ outcome: string }, []>('poke');

/** The bare Temporal baseline: started, signalled once, completed. */
export async function signalledOnce(): Promise<void> {
  let signalled = false;
  setHandler(goSignal, () => {
    signalled = true;
  });
  await condition(() => signalled);
}

const standIn = proxyLocalActivities<{ push(): Promise<void>; settle(): Promise<void> }>({
  startToCloseTimeout: '1 minute',
});

/**
 * The STK push workflow's Temporal shape with stand-in activities that do no work: a local
 * activity (the push, whose "callback" is this run's signal, sent while it runs), a wait for the
 * signal under a timer, a local activity (the settlement). What it reaches against
 * `signalledOnce` is the ceiling of any push built this way on the machine.
 */
export async function pushShaped(): Promise<{ status: string }> {
  let signalled = false;
  setHandler(goSignal, () => {
    signalled = true;
  });
  await standIn.push();
  await condition(() => signalled, '1 minute');
  await standIn.settle();
  return { status: 'POSTED' };
}

/** The bare Temporal start: a workflow that completes at once (what starting an offer is measured against). */
export async function startedOnly(): Promise<void> {}

/**
 * The bare Temporal Update: a run that waits for one Update, whose handler answers at once (no
 * validator, no activity), then completes (what confirming a code is measured against).
 */
export async function updatedOnce(): Promise<void> {
  let updated = false;
  setHandler(pokeUpdate, () => {
    updated = true;
    return { outcome: 'ACCEPTED' };
  });
  await condition(() => updated);
}

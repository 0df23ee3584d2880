import { condition, defineSignal, setHandler } from '@temporalio/workflow';

export const goSignal = defineSignal('go');

/** The bare Temporal baseline: started, signalled once, completed. */
export async function signalledOnce(): Promise<void> {
  let signalled = false;
  setHandler(goSignal, () => {
    signalled = true;
  });
  await condition(() => signalled);
}

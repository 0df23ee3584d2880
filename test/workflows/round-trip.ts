import { condition, defineQuery, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type { TestActivities } from '../support/test-activities';

/**
 * A test-only workflow that exercises what every real workflow relies on: an activity that
 * reaches Postgres, a signal, an Update with a validator, a query, and a deadline from input.
 */
export const addSignal = defineSignal<[number]>('add');
export const setLabelUpdate = defineUpdate<string, [string]>('setLabel');
export const totalQuery = defineQuery<number>('total');
export const finishSignal = defineSignal('finish');

const { countOrganizations } = proxyActivities<TestActivities>({ startToCloseTimeout: '10 seconds' });

export async function roundTripWorkflow(input: { waitMs: number }): Promise<{ total: number; label: string; organizations: number; finished: boolean }> {
  let total = 0;
  let label = '';
  let finished = false;
  setHandler(addSignal, (n) => {
    total += n;
  });
  setHandler(totalQuery, () => total);
  setHandler(
    setLabelUpdate,
    (next) => {
      const previous = label;
      label = next;
      return previous;
    },
    {
      validator: (next) => {
        if (next.length === 0) throw new Error('label must not be empty');
      },
    },
  );
  setHandler(finishSignal, () => {
    finished = true;
  });
  const organizations = await countOrganizations();
  await condition(() => finished, input.waitMs);
  return { total, label, organizations, finished };
}

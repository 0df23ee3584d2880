import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { mkdir, writeFile } from 'node:fs/promises';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { scheduleIds } from '../../workflows/ids';
import { OrganizationId } from '../../workflows/search-attributes';
import { ensureSchedules } from '../../worker/schedules/index';
import {
  addSignal,
  finishSignal,
  roundTripWorkflow,
  setLabelUpdate,
  totalQuery,
} from '../fixtures/workflows/round-trip';
import { harness } from '../support/harness';

const HISTORIES = path.join(__dirname, '..', 'replay', 'histories');

describe('Temporal through the shared harness', () => {
  it('runs a workflow with an activity on Postgres, a signal, an Update with a validator and a query', async () => {
    const { client, taskQueue } = harness();
    const organization = `org-${randomUUID()}`;
    const handle = await client.workflow.start(roundTripWorkflow, {
      taskQueue,
      workflowId: `round-trip/${randomUUID()}`,
      args: [{ waitMs: 30_000 }],
      typedSearchAttributes: [{ key: OrganizationId, value: organization }],
    });
    await handle.signal(addSignal, 2);
    await handle.signal(addSignal, 3);
    assert.equal(await handle.executeUpdate(setLabelUpdate, { args: ['first'] }), '');
    await assert.rejects(handle.executeUpdate(setLabelUpdate, { args: [''] }), WorkflowUpdateFailedError);
    assert.equal(await handle.query(totalQuery), 5);
    await handle.signal(finishSignal);
    const result = await handle.result();
    const [row] = await harness().db('organizations').count<{ count: string }[]>({ count: '*' });
    assert.deepEqual(result, { total: 5, label: 'first', organizations: Number(row!.count), finished: true });

    // The custom search attributes are registered: operators find runs by organization.
    let found: string[] = [];
    for (let i = 0; i < 50 && found.length === 0; i++) {
      found = [];
      for await (const run of client.workflow.list({ query: `OrganizationId = "${organization}"` }))
        found.push(run.workflowId);
      if (found.length === 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.deepEqual(found, [handle.workflowId]);

    if (process.env.RECORD_HISTORIES) {
      await mkdir(HISTORIES, { recursive: true });
      const history = await handle.fetchHistory();
      await writeFile(path.join(HISTORIES, 'roundTripWorkflow.json'), historyToJSON(history));
    }
  });

  it('the schedules are made once however many workers start together (none fails on another’s create)', async () => {
    const { client, config } = harness();
    const ids = Object.values(scheduleIds);
    await Promise.all(ids.map((id) => client.schedule.getHandle(id).delete()));
    // Three workers starting at once: each finds no schedule, one create wins, the others update it.
    await Promise.all([1, 2, 3].map(() => ensureSchedules(client, config)));
    for (const id of ids) assert.equal((await client.schedule.getHandle(id).describe()).scheduleId, id);
  });

  it('a workflow started twice with the same business id runs once', async () => {
    const { client, taskQueue } = harness();
    const workflowId = `round-trip/${randomUUID()}`;
    const first = await client.workflow.start(roundTripWorkflow, { taskQueue, workflowId, args: [{ waitMs: 30_000 }] });
    await assert.rejects(
      client.workflow.start(roundTripWorkflow, { taskQueue, workflowId, args: [{ waitMs: 30_000 }] }),
      /already started/i,
    );
    await first.signal(finishSignal);
    await first.result();
  });
});

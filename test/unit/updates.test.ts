import { strict as assert } from 'node:assert';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sendUpdate } from '../../api/updates';
import { ServiceError } from '../../domain/errors';

/** What the server answers an Update the workflow task carrying it completed without (the type it sets). */
const unprocessed = () =>
  new WorkflowUpdateFailedError(
    'Workflow Update failed',
    ApplicationFailure.create({ type: 'UnprocessedUpdate', message: "it wasn't processed by worker" }),
  );

describe('unit: an Update no worker processed is sent again (api/updates.ts)', () => {
  it('sends again while the server answers UnprocessedUpdate, and answers what the run then says', async () => {
    let sent = 0;
    const answer = await sendUpdate(async () => {
      sent += 1;
      if (sent < 3) throw unprocessed();
      return { eventId: 'e1' };
    });
    assert.deepEqual(answer, { eventId: 'e1' });
    assert.equal(sent, 3);
  });

  it('a refusal of the run is not sent again; still unprocessed after four tries is 503 with Retry-After', async () => {
    let sent = 0;
    const refusal = new WorkflowUpdateFailedError('failed', ApplicationFailure.create({ type: 'LOAN_CLOSED' }));
    await assert.rejects(
      sendUpdate(async () => {
        sent += 1;
        throw refusal;
      }),
      (error) => error === refusal,
    );
    assert.equal(sent, 1);
    await assert.rejects(
      sendUpdate(async () => {
        throw unprocessed();
      }),
      (error) =>
        error instanceof ServiceError && error.code === 'SERVICE_UNAVAILABLE' && !!error.headers['Retry-After'],
    );
  });
});

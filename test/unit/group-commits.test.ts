import { strict as assert } from 'node:assert';
import { groupCommits } from '../../domain/concurrency';

describe('unit: group commit (presigned documents are inserted together under load)', () => {
  it('a lone item is written at once, alone; items arriving while writes run share the next write', async () => {
    const writes: number[][] = [];
    const write = groupCommits<number>(
      async (items) => {
        writes.push(items);
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
      { maxBatch: 4, maxInFlight: 1 },
    );
    await write(0);
    assert.deepEqual(writes, [[0]]);
    await Promise.all(Array.from({ length: 9 }, (_, i) => write(i + 1)));
    assert.deepEqual(writes.flat(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'every item written once, in order');
    assert.ok(
      writes.every((items) => items.length <= 4),
      'at most maxBatch per write',
    );
    assert.ok(writes.length <= 4, `items shared writes: ${JSON.stringify(writes)}`);
  });

  it('each caller settles only once the write holding its item has', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const write = groupCommits<string>(() => gate, { maxBatch: 10, maxInFlight: 1 });
    let settled = false;
    const pending = write('a').then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(settled, false);
    release();
    await pending;
    assert.equal(settled, true);
  });

  it('a failed group is written again item by item: only the bad item’s caller fails', async () => {
    const written: string[] = [];
    const write = groupCommits<string>(
      async (items) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (items.includes('bad')) throw new Error('refused');
        written.push(...items);
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const first = write('first'); // written alone while the others queue
    const results = await Promise.allSettled([write('a'), write('bad'), write('b')]);
    await first;
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(written.sort(), ['a', 'b', 'first']);
  });
});

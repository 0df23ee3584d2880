import { strict as assert } from 'node:assert';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const folders = (layer: string) =>
  readdirSync(path.join(ROOT, layer)).filter((name) => statSync(path.join(ROOT, layer, name)).isDirectory());
const exists = (file: string) => existsSync(path.join(ROOT, file));
const filesUnder = (dir: string): string[] =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesUnder(`${dir}/${entry.name}`)
      : entry.name.endsWith('.ts')
        ? [`${dir}/${entry.name}`]
        : [],
  );

/** api/ folders that are not areas: what every route shares. */
const SHARED_API = new Set(['middleware', 'schemas']);

describe('one shape for every area (issue 31; ../shared/STYLE.md)', () => {
  it('an area with workflows has their messages.ts, an activities index.ts and, when the API starts them, api/<area>/workflows.ts', () => {
    for (const area of folders('workflows')) {
      assert.ok(exists(`workflows/${area}/messages.ts`), `workflows/${area}/messages.ts`);
      assert.ok(exists(`activities/${area}/index.ts`), `activities/${area}/index.ts (the area's factory)`);
      // Platform's runs are the schedules' (worker/schedules); every other area's the API starts.
      if (area !== 'platform') assert.ok(exists(`api/${area}/workflows.ts`), `api/${area}/workflows.ts`);
    }
  });

  it('only api/<area>/workflows.ts starts, signals or updates a run: no other API module touches the Temporal client’s workflows', () => {
    const offenders = filesUnder('api').filter(
      (file) =>
        !/^api\/[a-z-]+\/workflows\.ts$/.test(file) &&
        /\.workflow\.|\bWithStartWorkflowOperation\b/.test(readFileSync(path.join(ROOT, file), 'utf8')),
    );
    assert.deepEqual(offenders, []);
  });

  it('every area has its tests in test/<area>/', () => {
    for (const area of folders('api').filter((name) => !SHARED_API.has(name)))
      assert.ok(exists(`test/${area}`), `test/${area}/`);
  });

  it('activities are built from activities/deps.ts, never by importing activities/index.ts back', () => {
    const circular = filesUnder('activities').filter(
      (file) =>
        file.split('/').length > 2 &&
        /from '\.\.\/index'|from '\.\.'/.test(readFileSync(path.join(ROOT, file), 'utf8')),
    );
    assert.deepEqual(circular, []);
  });
});

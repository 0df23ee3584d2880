import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The README's layout block: each top-level folder it names, with the folders named under it. */
function documentedLayout(): Map<string, Set<string>> {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Layout'));
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the README has a layout block');
  const layout = new Map<string, Set<string>>();
  let top: Set<string> | undefined;
  for (const line of block.split('\n')) {
    const folders = [...line.matchAll(/(?:^|\s)([a-z][a-z-]*)\/(?=\s|$)/g)].map((m) => m[1]!);
    if (/^[a-z]/.test(line)) {
      const [first, ...rest] = folders;
      assert.ok(first && line.startsWith(`${first}/`), `a top-level line starts with its folder: ${line}`);
      top = new Set(rest);
      layout.set(first, top);
    } else for (const folder of folders) top?.add(folder);
  }
  return layout;
}

/** The folders git tracks files in: top-level ones, and each one's direct subfolders. */
function trackedFolders(): Map<string, Set<string>> {
  const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n');
  const folders = new Map<string, Set<string>>();
  for (const file of files) {
    const [top, sub, ...rest] = file.split('/');
    if (!top || sub === undefined || top.startsWith('.')) continue;
    if (!folders.has(top)) folders.set(top, new Set());
    if (rest.length > 0) folders.get(top)!.add(sub);
  }
  return folders;
}

describe('docs that cannot drift: the README layout is the tree, and every file named exists', () => {
  it('every folder it names exists, and every tracked folder of the project is named', () => {
    const documented = documentedLayout();
    const tracked = trackedFolders();
    for (const [top, subs] of documented) {
      assert.ok(tracked.has(top), `${top}/ is named in the layout but holds no tracked file`);
      for (const sub of subs) assert.ok(tracked.get(top)!.has(sub), `${top}/${sub}/ is named but does not exist`);
    }
    for (const [top, subs] of tracked) {
      const named = documented.get(top);
      assert.ok(named, `${top}/ is not in the README's layout`);
      for (const sub of subs) assert.ok(named.has(sub), `${top}/${sub}/ is not in the README's layout`);
    }
  });

  it('every path of a project file named in a comment or the README exists', () => {
    const tracked = execFileSync('git', ['ls-files', '*.ts', '*.md', '*.mjs'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    const layers = 'api|workflows|activities|worker|db|domain|providers|simulators|config|dev|test|bench';
    const mention = new RegExp(`(?:^|[^\\w./-])((?:${layers})/[\\w./-]+\\.(?:ts|json|md))`, 'g');
    const missing: string[] = [];
    for (const file of tracked) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      for (const [, named] of text.matchAll(mention))
        if (!existsSync(path.join(ROOT, named!))) missing.push(`${file} names ${named}`);
    }
    assert.deepEqual(missing, []);
  });
});

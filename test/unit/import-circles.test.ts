import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * No import circles among the project's TypeScript files (issue 48). Two modules that import each
 * other are one module cut in two: neither can be read, tested or moved alone, and the order in
 * which Node loads them decides which one sees the other half-built. Type-only imports count too:
 * they are where such a circle starts, and one value import later it is a real one.
 */

const ROOT = path.resolve(__dirname, '../..');

/** Every .ts file git tracks or would track (node_modules and other ignored folders left out). */
function projectFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file.endsWith('.ts') && existsSync(path.join(ROOT, file)));
}

/** The project file a relative specifier names (`./x`, `./x.js`, `./dir` for its index.ts); undefined for a package. */
function resolved(from: string, specifier: string, files: Set<string>): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.posix.join(path.posix.dirname(from), specifier).replace(/\.js$/, '');
  return [base, `${base}.ts`, `${base}/index.ts`].find((candidate) => files.has(candidate));
}

/** The specifiers a file imports: import and export declarations, `import x = require()`, import() and require(). */
function specifiersOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expression = node.moduleReference.expression;
      if (ts.isStringLiteral(expression)) found.push(expression.text);
    } else if (ts.isCallExpression(node)) {
      const [first] = node.arguments;
      const loads =
        node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require');
      if (loads && first && ts.isStringLiteral(first)) found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Each file's imports of other project files. */
function importGraph(): Map<string, string[]> {
  const files = projectFiles();
  const known = new Set(files);
  return new Map(
    files.map((file) => [file, specifiersOf(file).flatMap((specifier) => resolved(file, specifier, known) ?? [])]),
  );
}

/**
 * The groups of files that reach each other through imports (Tarjan's strongly connected
 * components), each with more than one file or a file importing itself: every circle lies in one.
 */
function circles(graph: Map<string, string[]>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    lowest.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(next)!));
      } else if (onStack.has(next)) lowest.set(file, Math.min(lowest.get(file)!, order.get(next)!));
    }
    if (lowest.get(file) !== order.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || graph.get(file)!.includes(file)) groups.push(group.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return groups;
}

describe('no import circles (issue 48)', () => {
  it('finds the circle in a graph that has one, and none in one that has not', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    assert.deepEqual(circles(graph), [['a.ts', 'b.ts', 'c.ts']]);
    graph.set('c.ts', []);
    assert.deepEqual(circles(graph), []);
  });

  it('no project .ts file imports, through any chain of imports (types included), itself', () => {
    const graph = importGraph();
    assert.ok(graph.size > 100, `the project's .ts files were found (${graph.size})`);
    assert.deepEqual(circles(graph), []);
  });
});

/**
 * The README's handler test ("Testing your handlers", the ```ts block between
 * `<!-- testing:start -->` and `<!-- testing:end -->`) run as written: its
 * imports of `tasklease` and `tasklease/testing` point at this repository's
 * sources, the file is written under .tmp/ (inside the project, so that
 * `vitest` resolves) and imported while this file is collected — its tests
 * are this file's tests.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const match = /<!-- testing:start -->\s*```ts\n([\s\S]*?)```\s*<!-- testing:end -->/.exec(readme);
if (!match) throw new Error('README.md has no ```ts block between <!-- testing:start --> and <!-- testing:end -->');
const block = match[1]!;
const source = block
  .replace(`from 'tasklease/testing';`, `from '${join(root, 'src/testing/index.js')}';`)
  .replace(`from 'tasklease';`, `from '${join(root, 'src/index.js')}';`);
const dir = join(root, '.tmp', 'readme-testing');
mkdirSync(dir, { recursive: true });
const file = join(dir, `handler-${process.pid}.ts`);
writeFileSync(file, `// Written from README.md by test/package/readme-testing.test.ts.\n${source}`);
await import(file);
afterAll(() => rmSync(file, { force: true }));

it('the README block imports the published entries, and has a test of its own', () => {
  expect(block).toContain(`from 'tasklease/testing';`);
  expect(block).toContain(`from 'tasklease';`);
  expect(source).not.toMatch(/from 'tasklease/);
  expect(block).toMatch(/\nit\('/);
});

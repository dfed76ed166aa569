/**
 * The fault tests' own PostgreSQL cluster runs its tools as the `postgres` OS
 * user (when the tests run as root) in a directory of its own, so a clone
 * that user cannot enter (under root's home) still starts its cluster.
 */
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { clusterTools, runAs } from './cluster.js';

const tools = (await clusterTools()) ?? { asUser: [], uid: null, gid: null };
const dir = mkdtempSync(join(tmpdir(), 'tasklease-cluster-cwd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('runs the cluster user\u2019s commands in the cluster\u2019s directory, not the test\u2019s working directory', async () => {
  if (tools.uid !== null) chownSync(dir, tools.uid, tools.gid!);
  chmodSync(dir, 0o700);
  expect(process.cwd()).not.toBe(dir);
  expect((await runAs(tools, dir, 'pwd', [])).trim()).toBe(dir);
  expect((await runAs(tools, dir, 'sh', ['-c', 'ls . >/dev/null && echo entered'])).trim()).toBe('entered');
});

/**
 * The tools only `.ci/run` installs (promtool, prometheus, chromium) are
 * treated like the database servers: a missing one skips its tests with one
 * line saying how to install it, except on CI, where it fails the run.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { systemTool } from '../helpers/system-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'tasklease-tools-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tool = { name: `tasklease-fake-tool-${process.pid}`, install: 'sh deploy/ci-install.sh' };

it('finds an installed tool on PATH', () => {
  const path = join(dir, tool.name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  expect(systemTool(tool, 'x.test.ts', { PATH: `/nonexistent:${dir}` })).toBe(path);
  rmSync(path);
});

it('outside CI, a missing tool skips with one line saying how to install it', () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  try {
    expect(systemTool(tool, 'x.test.ts', { PATH: dir })).toBeNull();
    expect(systemTool(tool, 'y.test.ts', { PATH: dir })).toBeNull();
    expect(log.mock.calls).toEqual([
      [`Tests that run ${tool.name} skipped (x.test.ts and the others): ${tool.name} is not on PATH; install it with: sh deploy/ci-install.sh`],
    ]);
  } finally {
    log.mockRestore();
  }
});

it('on CI, a missing tool fails with how to install it', () => {
  expect(() => systemTool(tool, 'x.test.ts', { PATH: dir, CI: 'true' })).toThrow(
    `${tool.name} is not on PATH; on CI the tests that run it must run: install it with sh deploy/ci-install.sh`,
  );
});

/**
 * System programs some tests run for real (Prometheus's promtool and server,
 * Debian's Chromium), installed by `.ci/run` through deploy/ci-install.sh and
 * ui/ci-install.sh. They are treated like the database servers: on CI
 * (CI=true) a missing one fails the file; elsewhere its tests are skipped
 * with one console line saying how to install it.
 */
import { accessSync, closeSync, constants, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { describe } from 'vitest';
import { skipMissing } from './factory.js';

export interface SystemTool {
  /** A name looked up on PATH, or an absolute path. */
  name: string;
  /** The command that installs it, from the repository's root. */
  install: string;
}

export const PROMTOOL: SystemTool = { name: 'promtool', install: 'sh deploy/ci-install.sh (apt-get install -y prometheus)' };
export const PROMETHEUS: SystemTool = { name: 'prometheus', install: 'sh deploy/ci-install.sh (apt-get install -y prometheus)' };
export const CHROMIUM_TOOL: SystemTool = {
  name: process.env.TASKLEASE_CHROMIUM ?? '/usr/bin/chromium',
  install: 'sh ui/ci-install.sh (apt-get install -y chromium), or set TASKLEASE_CHROMIUM',
};

/** The executable's absolute path, or null. */
export function findTool(name: string, path = process.env.PATH ?? ''): string | null {
  const candidates = isAbsolute(name)
    ? [name]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** The tool's path; null (after the one skip line) outside CI when it is missing; throws on CI. */
export function systemTool(tool: SystemTool, file: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const found = findTool(tool.name, env.PATH ?? '');
  if (found !== null) return found;
  const missing = isAbsolute(tool.name) ? `${tool.name} is not there` : `${tool.name} is not on PATH`;
  if (env.CI === 'true') throw new Error(`${missing}; on CI the tests that run it must run: install it with ${tool.install}`);
  if (firstSkipInThisRun(tool.name)) console.log(`Tests that run ${tool.name} skipped (${file} and the others): ${missing}; install it with: ${tool.install}`);
  return null;
}

/**
 * describe(title, body) when every tool is there, else a skip naming what is
 * missing (reached only outside CI: factory.ts skipMissing).
 */
export function describeWithTools(tools: readonly (string | null)[], needs: string, title: string, body: () => void): void {
  if (tools.every((tool) => tool !== null)) describe(title, body);
  else skipNotInstalled(title, needs);
}

/** The skip for programs that are not installed (factory.ts skipMissing; outside CI only: on CI their absence throws first). */
export function skipNotInstalled(title: string, needs: string): void {
  skipMissing(title, 'not installed', needs);
}

/** One skip line per tool per test run (test files run in workers of one vitest process, their parent). */
function firstSkipInThisRun(tool: string): boolean {
  try {
    closeSync(openSync(join(tmpdir(), `tasklease-tool-skip-${tool.replace(/\W/g, '_')}-${process.ppid}`), 'wx'));
    return true;
  } catch {
    return false;
  }
}

import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { skipWithoutServer } from '../helpers/factory.js';
import { killAllChildren } from '../process/harness.js';
import { FaultEnvironment } from './environment.js';
import { openTarget, unavailable, type FaultDialect } from './targets.js';

/**
 * describe() with a fresh fault environment on `dialect` for the file
 * (targets.ts; `ownServer`: on a database server of its own, which the
 * case may crash or freeze): opened before its tests, removed after them;
 * children killed, that server made healthy again and the tables emptied after
 * each test. Without the server or the cluster tools: fails on CI, else
 * skipped with one line.
 */
export async function describeOnStore(
  dialect: FaultDialect,
  title: string,
  body: (env: () => FaultEnvironment) => void,
  options: { ownServer?: boolean } = {},
): Promise<void> {
  const ownServer = options.ownServer ?? false;
  const missing = await unavailable(dialect, ownServer);
  if (missing !== null) {
    skipWithoutServer(`${title} on ${dialect}`, missing);
    return;
  }
  describe(`${title} on ${dialect}`, () => {
    let env: FaultEnvironment | undefined;
    beforeAll(async () => {
      env = await FaultEnvironment.on(await openTarget(dialect, ownServer));
    }, 120_000);
    afterEach(async () => {
      await killAllChildren();
      await env?.target.server?.restoreHealth();
      await env?.reset();
    });
    afterAll(async () => {
      await killAllChildren();
      await env?.close();
    }, 60_000);
    body(() => env!);
  });
}

/** The cases that crash, freeze or reconfigure their database: on the file's own PostgreSQL cluster. */
export function describeWithCluster(title: string, body: (env: () => FaultEnvironment) => void): Promise<void> {
  return describeOnStore('postgres', title, body);
}

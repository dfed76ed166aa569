import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { skipWithoutServer } from '../helpers/factory.js';
import { killAllChildren } from '../process/harness.js';
import { clusterTools, TestCluster } from './cluster.js';
import { FaultEnvironment } from './environment.js';

/**
 * describe() with a fresh cluster for the file: started before its tests,
 * crashed and removed after them; children killed and tables emptied after
 * each test. Without initdb/pg_ctl: fails on CI, else skipped with one line.
 */
export async function describeWithCluster(title: string, body: (env: () => FaultEnvironment) => void): Promise<void> {
  const tools = await clusterTools();
  if (!tools) {
    if (process.env.CI === 'true') throw new Error('the fault suite needs initdb and pg_ctl on PATH (PostgreSQL server binaries)');
    skipWithoutServer(title, 'initdb and pg_ctl (PostgreSQL server binaries) on PATH');
    return;
  }
  describe(title, () => {
    let cluster: TestCluster | undefined;
    let env: FaultEnvironment | undefined;
    beforeAll(async () => {
      cluster = await TestCluster.create(tools);
      env = await FaultEnvironment.open(cluster);
    }, 120_000);
    afterEach(async () => {
      await killAllChildren();
      await cluster?.restoreHealth();
      await env?.reset();
    });
    afterAll(async () => {
      await killAllChildren();
      await env?.close();
      await cluster?.destroy();
    }, 60_000);
    body(() => env!);
  });
}

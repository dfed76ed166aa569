/**
 * client.waitFor in another process: the waiter has its own store and
 * connections, a worker in this process runs the task, and the waiter
 * resolves with the finished task, on every store.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { createWorker } from '../../src/worker/worker.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { onEveryStore } from './areas.js';
import { spawnLineChild } from './line-child.js';
import type { WaitChildConfig } from './wait-child.js';

await onEveryStore('test/process/wait.test.ts', 'waitFor from another process', (withArea) => {
  it('the waiting process resolves with the task a worker here finished', { timeout: 60_000 }, () =>
    withArea(async ({ store, childStore }) => {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const job = defineTask<{ n: number }>({
        type: 'wait.process',
        execute: async (_ctx, payload) => {
          await gate;
          return TaskResult.success({ result: { n: payload.n + 1 } });
        },
      });
      const { task } = await createClient({ store, tasks: [job] }).submit(job, { n: 1 });
      const config: WaitChildConfig = { label: 'w1', store: childStore, taskId: task.id };
      const waiter = spawnLineChild<{ id: string; status: string; result: unknown }>(join(import.meta.dirname, 'wait-child.ts'), config);
      await waiter.ready;
      const worker = createWorker({ store, tasks: [job], ...FAST_WORKER });
      await worker.start();
      try {
        await waitFor(async () => (await store.getTask({ id: task.id, scope: Scope.global() }))?.status === 'RUNNING', 'the task to run');
        waiter.go();
        open();
        expect(await waiter.exited).toEqual([{ id: task.id, status: 'SUCCESS', result: { n: 2 } }]);
      } finally {
        await worker.stop();
      }
    }),
  );
});

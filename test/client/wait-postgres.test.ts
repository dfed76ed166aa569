import { describe, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { onPostgres } from '../helpers/postgres.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { expectWokenAcrossStores, runWaitSuite } from './wait-suite.js';

await onPostgres('test/client/wait-postgres.test.ts', 'waitFor', runWaitSuite);

await onPostgres('test/client/wait-postgres.test.ts', 'waitFor across processes', (factory: StoreFactory) => {
  describe('waitFor on postgres, across processes', () => {
    const env = perTestStore(factory);
    it('wakes on the NOTIFY of an outcome written by another store, not on its poll timer', async () => {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const job = defineTask({
        type: 'wait.remote',
        execute: async () => {
          await gate;
          return TaskResult.success({});
        },
      });
      await env.track(createWorker({ store: env.store, tasks: [job], ...FAST_WORKER })).start();
      // Another store object on the schema: its own pools, LISTEN connection and bus, as another process has.
      const waiterStore = await factory.create();
      try {
        await expectWokenAcrossStores(
          waiterStore,
          async () => (await createClient({ store: env.store, tasks: [job] }).submit(job, {})).task.id,
          async () => open(),
        );
      } finally {
        await factory.destroy(waiterStore);
      }
    });
  });
});

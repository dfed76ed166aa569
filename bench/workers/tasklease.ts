/** Worker process for tasklease on any store (see bench/systems/tasklease.ts). */
import { library } from '../systems/tasklease-lib.js';
import { TASK_TYPE } from '../types.js';
import type { TaskleaseWorkerOptions } from '../systems/tasklease.js';
import { openStore } from '../systems/tasklease-stores.js';
import { runChild } from './child.js';

runChild(async (spec, onTask) => {
  const options = spec.options as unknown as TaskleaseWorkerOptions;
  const { createWorker, defineTask } = await library();
  const store = await openStore(options.store);
  const worker = createWorker({
    store,
    tasks: [
      defineTask<unknown>({
        type: TASK_TYPE,
        execute: (_ctx, payload) => {
          onTask(payload);
        },
      }),
    ],
    concurrency: spec.concurrency,
    prefetch: options.prefetch,
    globalConcurrency: options.globalConcurrency,
    typeConcurrency: options.typeConcurrency,
  });
  worker.on('error', ({ operation, error }) => console.error(`[tasklease worker] ${operation}: ${(error as Error).message}`));
  await store.now(); // connect before `go`
  return {
    start() {
      worker.start();
    },
    async stop() {
      await worker.stop();
      await store.close();
    },
  };
});

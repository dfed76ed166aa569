/** Worker process for BullMQ (see bench/systems/bullmq.ts). */
import { Worker } from 'bullmq';
import { TASK_TYPE } from '../types.js';
import type { BullmqOptions } from '../systems/bullmq.js';
import { runChild } from './child.js';

runChild(async (spec, onTask) => {
  const options = spec.options as unknown as BullmqOptions;
  const worker = new Worker(
    TASK_TYPE,
    async (job) => {
      onTask(job.data);
    },
    { connection: options.connection, prefix: options.prefix, concurrency: spec.concurrency, autorun: false },
  );
  worker.on('error', (error) => console.error(`[bullmq worker] ${error.message}`));
  await worker.waitUntilReady();
  return {
    start() {
      // run() resolves only when the worker closes.
      worker.run().catch((error: unknown) => console.error(`[bullmq worker] ${(error as Error).message}`));
    },
    async stop() {
      await worker.close();
    },
  };
});

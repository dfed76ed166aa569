/** Worker process for graphile-worker (see bench/systems/graphile-worker.ts). */
import pg from 'pg';
import { run, type Runner } from 'graphile-worker';
import { TASK_TYPE } from '../types.js';
import { quietLogger, type GraphileWorkerOptions } from '../systems/graphile-worker.js';
import { runChild } from './child.js';

runChild(async (spec, onTask) => {
  const options = spec.options as unknown as GraphileWorkerOptions;
  // A pool the size graphile-worker recommends (max(10, concurrency + 2)), warmed before `go`.
  const pgPool = new pg.Pool({ connectionString: options.connectionString, max: Math.max(10, spec.concurrency + 2) });
  pgPool.on('error', (error) => console.error(`[graphile-worker pool] ${error.message}`));
  pgPool.on('connect', (client) => client.on('error', (error) => console.error(`[graphile-worker client] ${error.message}`)));
  await pgPool.query('select 1');
  let runner: Runner | null = null;
  return {
    async start() {
      runner = await run({
        pgPool,
        schema: options.schema,
        concurrency: spec.concurrency,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: {
          [TASK_TYPE]: async (payload) => {
            onTask(payload);
          },
        },
        preset: {
          worker: {
            localQueue: { size: options.localQueueSize },
            completeJobBatchDelay: options.completeJobBatchDelay,
          },
        },
      });
    },
    async stop() {
      await runner?.stop();
      await pgPool.end();
    },
  };
});

/** Worker process for pg-boss (see bench/systems/pg-boss.ts). */
import PgBoss from 'pg-boss';
import { TASK_TYPE } from '../types.js';
import type { PgBossOptions } from '../systems/pg-boss.js';
import { runChild } from './child.js';

runChild(async (spec, onTask) => {
  const options = spec.options as unknown as PgBossOptions;
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: options.schema,
    supervise: false,
    schedule: false,
    migrate: false,
  });
  boss.on('error', (error) => console.error(`[pg-boss worker] ${error.message}`));
  await boss.start();
  return {
    async start() {
      for (let slot = 0; slot < spec.concurrency; slot += 1) {
        await boss.work(TASK_TYPE, { batchSize: options.batchSize, pollingIntervalSeconds: options.pollingIntervalSeconds }, async (jobs) => {
          for (const job of jobs) onTask(job.data);
        });
      }
    },
    async stop() {
      await boss.stop({ graceful: true, wait: true, close: true, timeout: 10_000 });
    },
  };
});

/**
 * A worker process declaring one per-second schedule, for
 * processes.test.ts. Configured by env TL_CHILD (JSON, SchedulerChildConfig).
 * It passes a start barrier (a folder where each process marks itself; all
 * start their scheduler once `parties` are there), then reports on stdout as
 * JSON lines: `ready`, one `scheduled` per tick claim it won (with the ticks),
 * `error`, and on SIGTERM a final `stopped`.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineTask } from '../../src/core/definition.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import { openChildStore, type ChildStoreConfig } from '../process/child-store.js';

export interface SchedulerChildConfig {
  label: string;
  store: ChildStoreConfig | { dialect: 'sqlite'; path: string };
  barrier: string;
  parties: number;
  scheduleKey: string;
  taskType: string;
}

const config = JSON.parse(process.env.TL_CHILD!) as SchedulerChildConfig;
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

const store: Store = config.store.dialect === 'sqlite' ? new SqliteStore({ path: config.store.path }) : await openChildStore(config.store, config.label);

writeFileSync(join(config.barrier, config.label), '');
const deadline = Date.now() + 60_000;
while (readdirSync(config.barrier).length < config.parties) {
  if (Date.now() > deadline) throw new Error('the other scheduler processes never started');
  await new Promise((resolve) => setTimeout(resolve, 5));
}

const worker = createWorker({
  store,
  tasks: [defineTask({ type: config.taskType, execute: async () => undefined })],
  schedules: [{ key: config.scheduleKey, taskType: config.taskType, cron: '* * * * * *', catchUp: 5 }],
  scheduleRefreshMs: 5000,
  pollIntervalMs: 50,
  logger: false,
});
worker.on('scheduled', ({ ticks }) => say({ event: 'scheduled', ticks: ticks.map((tick) => tick.toISOString()) }));
worker.on('error', ({ operation, error }) => say({ event: 'error', operation, message: String(error) }));
worker.start();
say({ event: 'ready', pid: process.pid });

process.on('SIGTERM', () => {
  void worker
    .stop()
    .then(() => store.close())
    .then(() => {
      say({ event: 'stopped' });
      process.exit(0);
    });
});

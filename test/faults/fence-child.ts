/**
 * A worker process for the fence fault case (fence-cases.ts; spawned through
 * test/process/harness.ts, config as JSON in env TL_CHILD). Its one task type
 * `fenced` takes the lease's fence (ctx.fence) and writes the task's effect
 * to a SECOND database — not the task store — with the two conditional writes
 * the README shows: an UPDATE … WHERE fence < $fence, then an upsert that
 * replaces the row only for a greater fence. On `holdAttempt` the handler
 * first waits, deaf to its signal, until the file <goDir>/<task id> exists:
 * a zombie that took its fence, froze, and writes when it wakes up
 * as though nothing happened.
 *
 * stdout: JSON lines ready, fenced (with the fence), foreignWrite (the fence
 * and the rows each write changed), leaseLost, error, stopped.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskContext } from '../../src/core/context.js';
import { defineTask } from '../../src/core/definition.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker } from '../../src/worker/worker.js';
import { openChildStore, type ChildStoreConfig } from '../process/child-store.js';

export interface ForeignDb {
  dialect: 'postgres' | 'mysql';
  url: string;
}

export interface FenceChildConfig {
  label: string;
  store: ChildStoreConfig;
  foreign: ForeignDb;
  goDir: string;
  holdAttempt: number;
  worker: Partial<Omit<WorkerOptions, 'store' | 'tasks' | 'logger' | 'workerId'>>;
}

/** The two fenced writes on the second database: rows changed by each. */
type FencedWrites = (taskId: string, fence: number, writer: string) => Promise<{ updated: number; upserted: number }>;

async function openForeign(foreign: ForeignDb): Promise<{ write: FencedWrites; close(): Promise<void> }> {
  if (foreign.dialect === 'postgres') {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: foreign.url });
    await client.connect();
    return {
      async write(taskId, fence, writer) {
        const updated = await client.query('UPDATE fenced_effect SET writer = $2, fence = $3 WHERE task_id = $1 AND fence < $3', [taskId, writer, fence]);
        const upserted = await client.query(
          `INSERT INTO fenced_effect AS t (task_id, fence, writer) VALUES ($1, $2, $3)
           ON CONFLICT (task_id) DO UPDATE SET fence = EXCLUDED.fence, writer = EXCLUDED.writer WHERE t.fence < EXCLUDED.fence`,
          [taskId, fence, writer],
        );
        return { updated: updated.rowCount ?? 0, upserted: upserted.rowCount ?? 0 };
      },
      close: () => client.end(),
    };
  }
  const { default: mysql } = await import('mysql2/promise');
  // Without FOUND_ROWS: affectedRows counts rows changed (an upsert that changes nothing answers 0, an insert 1, an update 2).
  const conn = await mysql.createConnection({ uri: foreign.url, flags: ['-FOUND_ROWS'] });
  return {
    async write(taskId, fence, writer) {
      const [updated] = await conn.query('UPDATE fenced_effect SET writer = ?, fence = ? WHERE task_id = ? AND fence < ?', [writer, fence, taskId, fence]);
      // Assignments run left to right: writer is decided on the old fence, before fence changes.
      const [upserted] = await conn.query(
        `INSERT INTO fenced_effect (task_id, fence, writer) VALUES (?, ?, ?)
         ON DUPLICATE KEY UPDATE writer = IF(fence < VALUES(fence), VALUES(writer), writer), fence = GREATEST(fence, VALUES(fence))`,
        [taskId, fence, writer],
      );
      return { updated: (updated as { affectedRows: number }).affectedRows, upserted: (upserted as { affectedRows: number }).affectedRows };
    },
    close: () => conn.end(),
  };
}

const config = JSON.parse(process.env.TL_CHILD!) as FenceChildConfig;
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify({ ...line, at: Date.now() })}\n`);
const store = await openChildStore(config.store, config.label);
const foreign = await openForeign(config.foreign);

/** Polls for the go file, ignoring the signal on purpose (a zombie that does not listen). */
async function goFile(taskId: string): Promise<void> {
  while (!existsSync(join(config.goDir, taskId))) await new Promise((resolve) => setTimeout(resolve, 20));
}

const fenced = defineTask({
  type: 'fenced',
  execute: async (ctx: TaskContext) => {
    const fence = await ctx.fence();
    say({ event: 'fenced', id: ctx.taskId, attempt: ctx.attempt, fence });
    if (ctx.attempt === config.holdAttempt) await goFile(ctx.taskId);
    const rows = await foreign.write(ctx.taskId, fence, config.label);
    say({ event: 'foreignWrite', id: ctx.taskId, attempt: ctx.attempt, fence, ...rows });
    return { status: 'SUCCESS' as const, result: { by: config.label, fence } };
  },
});

const worker = createWorker({ store, tasks: [fenced], workerId: config.label, ...config.worker });
worker.on('leaseLost', ({ task, reason }) => say({ event: 'leaseLost', id: task.id, reason }));
worker.on('error', ({ operation, error }) => say({ event: 'error', operation, message: String((error as Error)?.message ?? error) }));
worker.start();
say({ event: 'ready', pid: process.pid });

process.on('SIGTERM', () => {
  void worker.stop().then(async () => {
    await store.close().catch(() => undefined);
    await foreign.close().catch(() => undefined);
    process.stdout.write(`${JSON.stringify({ event: 'stopped', completed: [] })}\n`, () => process.exit(0));
  });
});

/**
 * A bulk operation over many tasks with a restart in the middle, on every
 * store, through the real product: `tasklease bulk pause --yes` runs in its
 * own process; once its saved progress shows a fifth of the tasks done, the
 * process is killed (SIGKILL: no hand-back, its lease must expire); a new
 * process (`tasklease bulk continue`) goes on from the saved cursor. Then every
 * task is PAUSED exactly once (a sample's timelines hold one PAUSE each), the
 * operation SUCCEEDED, and its counts say what happened: processed covers
 * every task, changed misses at most the batch the killed process had applied
 * but not saved. restart.test.ts runs it at 100,000 tasks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { BulkOperation } from '../../src/client/bulk.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/types.js';
import { cli, spawnCli } from '../cli/harness.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

const TYPE = 'bulk.scale';
const task = defineTask<{ n: number }>({ type: TYPE });

interface Target {
  dialect: string;
  url(): string;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
}

export async function restartCases(file: string, size: { tasks: number; batch: number; pauseMs: number; timeoutMs: number }): Promise<void> {
  const pg = await postgresAvailable(file);
  const my = await mysqlAvailable(file);
  let dir = '';
  let schema: TestSchema | undefined;
  let database: TestDatabase | undefined;
  const targets: Target[] = [
    {
      dialect: 'sqlite',
      url: () => `sqlite:${join(dir, 'tasks.db')}`,
      setUp: async () => {
        dir = mkdtempSync(join(tmpdir(), 'tl-bulk-restart-'));
      },
      tearDown: async () => rmSync(dir, { recursive: true, force: true }),
    },
    ...(pg
      ? [
          {
            dialect: 'postgres',
            url: () => `${PG_URL}?schema=${schema!.name}&poolSize=4`,
            setUp: async () => {
              schema = await createTestSchema();
            },
            tearDown: async () => schema?.drop(),
          },
        ]
      : []),
    ...(my
      ? [
          {
            dialect: 'mysql',
            url: () => database!.uri,
            setUp: async () => {
              database = await createTestDatabase();
            },
            tearDown: async () => database?.drop(),
          },
        ]
      : []),
  ];

  for (const target of targets) {
    describe(`a bulk operation over ${size.tasks.toLocaleString('en')} tasks with a restart in the middle (${target.dialect})`, () => {
      let store: Store;
      beforeAll(async () => {
        await target.setUp();
        store = await openStore(target.url());
        await store.migrate();
      }, 120_000);
      afterAll(async () => {
        await store?.close();
        await target.tearDown();
      });

      it('a killed process’s operation goes on in a new one from its saved cursor: every task paused once', { timeout: size.timeoutMs }, async () => {
        const client = createClient({ store, tasks: [task] });
        const inserting = Date.now();
        for (let from = 0; from < size.tasks; from += 1000) {
          const count = Math.min(1000, size.tasks - from);
          await client.submitMany(Array.from({ length: count }, (_, i) => ({ type: TYPE, payload: { n: from + i }, delayMs: 3_600_000 })));
        }
        const insertMs = Date.now() - inserting;
        const env = { TASKLEASE_DATABASE_URL: target.url(), TASKLEASE_BULK_LEASE_MS: '2000' };
        const flags = ['--type', TYPE, '--batch-size', String(size.batch), '--pause', `${size.pauseMs}ms`];
        const first = spawnCli(['bulk', 'pause', ...flags, '--yes'], { env });
        const seen: number[] = [];
        let op: BulkOperation | undefined;
        const running = Date.now();
        await waitFor(
          async () => {
            op = (await client.bulk.list({ limit: 1 }))[0];
            if (op && seen.at(-1) !== op.processed) seen.push(op.processed);
            return op !== undefined && op.processed >= size.tasks / 5;
          },
          'the first process to save a fifth of the tasks',
          size.timeoutMs / 2,
          20,
        );
        first.child.kill('SIGKILL');
        const killed = await first.exited;
        expect(killed.code).not.toBe(0);
        const atKill = (await client.bulk.get(op!.id))!;
        expect(atKill.status, 'the first process finished before it was killed: raise the pause').toBe('RUNNING');
        expect(atKill.matched).toBe(size.tasks);
        expect(atKill.processed).toBeLessThan(size.tasks);
        expect(seen.filter((n) => n > 0).length).toBeGreaterThanOrEqual(1); // progress was visible while it ran

        // The restart: a new process; it takes the operation once the dead one's lease (2 s) has expired.
        const continuing = Date.now();
        await waitFor(
          async () => {
            const resumed = await cli(['bulk', 'continue', '--json'], { env });
            expect(resumed.code, resumed.stderr).toBe(0);
            return (resumed.json() as { resumed: string[] }).resumed.includes(atKill.id);
          },
          'a new process to resume the operation',
          size.timeoutMs / 2,
          500,
        );
        const ended = (await client.bulk.get(atKill.id))!;
        const counts = await store.countByStatus({ scope: Scope.global(), taskType: TYPE });
        console.log(
          `[${target.dialect}] bulk pause of ${size.tasks} tasks (batch ${size.batch}, pause ${size.pauseMs} ms): inserted in ${(insertMs / 1000).toFixed(1)} s; ` +
            `killed at ${atKill.processed} processed after ${((continuing - running) / 1000).toFixed(1)} s; resumed and ended in ${((Date.now() - continuing) / 1000).toFixed(1)} s ` +
            `(processed ${ended.processed}, changed ${ended.changed}, progress readings ${seen.length})`,
        );
        expect(ended).toMatchObject({ status: 'SUCCEEDED', matched: size.tasks });
        expect(counts.PAUSED).toBe(size.tasks);
        expect(counts.QUEUED).toBe(0);
        // Processed counts every task at least once (the killed batch is looked at again); changed misses at most that batch.
        expect(ended.processed).toBeGreaterThanOrEqual(size.tasks);
        expect(ended.processed).toBeLessThanOrEqual(size.tasks + size.batch);
        expect(ended.changed).toBeGreaterThanOrEqual(size.tasks - size.batch);
        expect(ended.changed).toBeLessThanOrEqual(size.tasks);
        // Nothing changed twice: a sample of timelines holds one PAUSE each, by this operation.
        const page = await client.list({ taskType: TYPE, limit: 1000 });
        for (const sampled of page.tasks.filter((_, i) => i % 50 === 0)) {
          const pauses = (await client.actions(sampled.id)).filter((a) => a.action === 'PAUSE');
          expect(pauses.map((a) => a.detail)).toEqual([`bulk ${atKill.id}`]);
        }
      });
    });
  }
}

/**
 * Exactly one submit per tick under 4 processes: four worker processes
 * declare the same per-second schedule against one database, start their
 * schedulers together (a barrier), and race for every tick. Each process
 * reports the ticks whose claim it won; across all four no tick may be won
 * twice (the task table's idempotency key would hide a double insert, the
 * claims do not), every tick from the first to the last is there, and each
 * has exactly one task.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import { skipWithoutServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable } from '../helpers/mysql.js';
import { createTestSchema, PG_URL, postgresAvailable } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { mysqlChildUser } from '../process/child-store.js';
import { ChildWorker, killAllChildren, type ChildEvent } from '../process/harness.js';
import type { SchedulerChildConfig } from './scheduler-child.js';

const PROCESSES = 4;
const TICKS = 6;
const TYPE = 'schedule.race';
const CHILD = join(import.meta.dirname, 'scheduler-child.ts');

interface Area {
  store: Store;
  childStore: SchedulerChildConfig['store'];
  dispose(labels: string[]): Promise<void>;
}

afterEach(killAllChildren);

async function raceForTicks(area: Area): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-ticks-'));
  const barrier = join(dir, 'barrier');
  mkdirSync(barrier);
  const scheduleKey = `race-${randomBytes(3).toString('hex')}`;
  const labels = Array.from({ length: PROCESSES }, (_, i) => `s${i}${randomBytes(2).toString('hex')}`);
  try {
    const configs: SchedulerChildConfig[] = labels.map((label) => ({
      label,
      store: area.childStore,
      barrier,
      parties: PROCESSES,
      scheduleKey,
      taskType: TYPE,
    }));
    const children = configs.map((config) => new ChildWorker(config as { label: string }, CHILD));
    await Promise.all(children.map((child) => child.until('ready', 60_000)));
    const tasks = async () => (await area.store.listTasks({ scope: Scope.global(), taskType: TYPE, limit: 1000 })).tasks;
    await waitFor(async () => (await tasks()).length >= TICKS, `${TICKS} ticks submitted`, 60_000, 100);
    await Promise.all(children.map((child) => child.stop()));

    const won = children.flatMap((child) => child.events.filter((e) => e.event === 'scheduled').flatMap((e) => (e as ChildEvent & { ticks: string[] }).ticks));
    const keys = (await tasks()).map((task) => task.idempotencyKey!);
    console.log(`ticks won per process: ${children.map((child) => child.count('scheduled')).join(', ')}`);
    expect(children.flatMap((child) => child.events.filter((e) => e.event === 'error'))).toEqual([]);
    expect(won.length).toBe(new Set(won).size);
    expect(keys.length).toBe(new Set(keys).size);
    expect(new Set(keys)).toEqual(new Set(won.map((tick) => `schedule:${scheduleKey}:${tick}`)));
    const seconds = won.map((tick) => Date.parse(tick) / 1000).sort((a, b) => a - b);
    expect(seconds.at(-1)! - seconds[0]! + 1).toBe(seconds.length);
  } finally {
    await area.dispose(labels);
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('periodic ticks under 4 processes', () => {
  it('sqlite: each tick is submitted exactly once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-'));
    const path = join(dir, 'tasks.db');
    const store = new SqliteStore({ path });
    await store.migrate();
    await raceForTicks({
      store,
      childStore: { dialect: 'sqlite', path },
      async dispose() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    });
  }, 120_000);
});

if (await postgresAvailable('test/schedules/processes.test.ts')) {
  it('postgres: each tick is submitted exactly once', async () => {
    const schema = await createTestSchema();
    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 });
    await store.migrate();
    await raceForTicks({
      store,
      childStore: { dialect: 'postgres', url: PG_URL, schema: schema.name },
      async dispose() {
        await store.close();
        await schema.drop();
      },
    });
  }, 120_000);
} else {
  skipWithoutServer('periodic ticks under 4 processes on postgres', 'PostgreSQL');
}

if (await mysqlAvailable('test/schedules/processes.test.ts')) {
  it('mysql: each tick is submitted exactly once', async () => {
    const database = await createTestDatabase();
    const store = new MysqlStore({ uri: database.uri, poolSize: 2 });
    await store.migrate();
    await raceForTicks({
      store,
      childStore: { dialect: 'mysql', uri: database.uri },
      async dispose(labels) {
        await store.close();
        for (const label of labels) await database.query("DROP USER IF EXISTS ?@'%'", [mysqlChildUser(database.uri, label)]);
        await database.drop();
      },
    });
  }, 120_000);
} else {
  skipWithoutServer('periodic ticks under 4 processes on mysql', 'MySQL/MariaDB');
}

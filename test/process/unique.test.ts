/**
 * Uniqueness under concurrent submits from several OS processes, each with
 * its own store and connections, released at the same moment: exactly one
 * task per key for each mode (by state, throttle, debounce), on every store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable } from '../helpers/mysql.js';
import { createTestSchema, PG_URL, postgresAvailable } from '../helpers/postgres.js';
import type { UniqueChildConfig } from './unique-child.js';

const PROCESSES = 4;
const PER_MODE = 10;
const MODES = { state: { key: 'k' }, throttle: { key: 'k', periodMs: 3_600_000 }, debounce: { key: 'k', debounceMs: 3_600_000 } };

interface Answer {
  event: string;
  mode: string;
  id: string;
  created: boolean;
}

const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  children.clear();
});

/** Starts the children, waits until each has its store open, releases them together, and collects every answer. */
async function submitFromProcesses(store: UniqueChildConfig['store']): Promise<Answer[]> {
  const runs = Array.from({ length: PROCESSES }, (_, i) => {
    const config: UniqueChildConfig = { label: `u${i}`, store, perMode: PER_MODE, modes: MODES };
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'unique-child.ts')], {
      env: { ...process.env, TL_CHILD: JSON.stringify(config) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.add(child);
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const answers: Answer[] = [];
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as Answer;
      if (message.event === 'ready') markReady();
      else answers.push(message);
    });
    const exited = new Promise<Answer[]>((resolve, reject) =>
      child.on('exit', (code) => (code === 0 ? resolve(answers) : reject(new Error(`child ${config.label} exited ${code}: ${stderr}`)))),
    );
    return { child, ready: Promise.race([ready, exited.then(() => undefined)]), exited };
  });
  await Promise.all(runs.map((r) => r.ready));
  for (const r of runs) r.child.stdin!.end('go\n');
  return (await Promise.all(runs.map((r) => r.exited))).flat();
}

async function expectOnePerMode(store: Store, answers: Answer[]): Promise<void> {
  expect(answers).toHaveLength(PROCESSES * PER_MODE * Object.keys(MODES).length);
  for (const mode of Object.keys(MODES)) {
    const ofMode = answers.filter((a) => a.mode === mode);
    expect(
      ofMode.filter((a) => a.created),
      mode,
    ).toHaveLength(1);
    expect(new Set(ofMode.map((a) => a.id)).size, mode).toBe(1);
  }
  const page = await store.listTasks({ scope: Scope.global(), limit: 100 });
  expect(page.tasks).toHaveLength(Object.keys(MODES).length);
}

const TIMEOUT = 120_000;

describe('uniqueness under submits from several processes on sqlite', () => {
  it(`${PROCESSES} processes, one task per mode`, { timeout: TIMEOUT }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-unique-'));
    const store = new SqliteStore({ path: join(dir, 'tasks.db') });
    try {
      await store.migrate();
      await expectOnePerMode(store, await submitFromProcesses({ dialect: 'sqlite', path: join(dir, 'tasks.db') }));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeOnServer(await postgresAvailable('test/process/unique.test.ts'), 'PostgreSQL', 'uniqueness under submits from several processes on postgres', () => {
  it(`${PROCESSES} processes, one task per mode`, { timeout: TIMEOUT }, async () => {
    const schema = await createTestSchema();
    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 });
    try {
      await store.migrate();
      await expectOnePerMode(store, await submitFromProcesses({ dialect: 'postgres', url: PG_URL, schema: schema.name }));
    } finally {
      await store.close();
      await schema.drop();
    }
  });
});

describeOnServer(await mysqlAvailable('test/process/unique.test.ts'), 'MariaDB', 'uniqueness under submits from several processes on mysql', () => {
  it(`${PROCESSES} processes, one task per mode`, { timeout: TIMEOUT }, async () => {
    const database = await createTestDatabase();
    const store = new MysqlStore({ uri: database.uri, poolSize: 2 });
    try {
      await store.migrate();
      await expectOnePerMode(store, await submitFromProcesses({ dialect: 'mysql', uri: database.uri }));
    } finally {
      await store.close();
      await database.drop();
    }
  });
});

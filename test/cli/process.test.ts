/**
 * The real `tasklease` process: exit codes and stdout as a shell sees them,
 * and `tasklease worker` stopping gracefully on SIGTERM — the task it is
 * running finishes before the process exits 0 — on SQLite and PostgreSQL.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../../src/core/task.js';
import { postgresAvailable, createTestSchema, PG_URL, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { cli, FIXTURES, spawnCli } from './harness.js';

const pgAvailable = await postgresAvailable('test/cli/process.test.ts');

describe('the tasklease process', () => {
  let dir: string;
  let schema: TestSchema | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-cli-process-'));
    if (pgAvailable) schema = await createTestSchema();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await schema?.drop();
  });

  const targets = [
    { dialect: 'sqlite', url: () => `sqlite:${join(dir, 'tasks.db')}` },
    ...(pgAvailable ? [{ dialect: 'postgres', url: () => `${PG_URL}?schema=${schema!.name}&poolSize=2` }] : []),
  ];

  for (const target of targets) {
    it(`runs a worker that finishes its running task on SIGTERM, then exits 0 (${target.dialect})`, async () => {
      const env = { TASKLEASE_DATABASE_URL: target.url() };
      expect((await cli(['migrate'], { env })).code).toBe(0);

      const worker = spawnCli(
        ['worker', join(FIXTURES, 'scheduled-tasks.ts'), join(FIXTURES, 'tasks.ts'), '--concurrency', '2', '--poll', '50ms', '--fair-owners'],
        {
          env: { ...env, TASKLEASE_SHUTDOWN_GRACE_MS: '20000', TASKLEASE_SCHEDULE_REFRESH_MS: '30000' },
        },
      );
      const get = async (id: string): Promise<Task> => (await cli(['get', id, '--json'], { env })).json<Task>();
      const submit = async (type: string, payload: unknown): Promise<string> =>
        (await cli(['submit', type, JSON.stringify(payload), '--json'], { env })).json<{ id: string }>().id;

      const echo = await submit('cli.echo', { value: target.dialect });
      await waitFor(async () => (await get(echo)).status === 'SUCCESS', 'the echo task to succeed', 30_000, 50);
      const release = join(dir, `release-${target.dialect}`);
      const slow = await submit('cli.wait', { path: release });
      await waitFor(async () => (await get(slow)).status === 'RUNNING', 'the slow task to start', 30_000, 50);

      worker.child.kill('SIGTERM');
      await waitFor(() => worker.output().stdout.includes('"worker stopping"'), 'the worker to log that it is stopping', 10_000, 20);
      // Stopping, it claims nothing new and waits for the running handler.
      expect((await get(slow)).status).toBe('RUNNING');
      writeFileSync(release, '');
      const exited = await worker.exited;
      expect(exited.code, exited.stderr).toBe(0);
      expect((await get(slow)).status).toBe('SUCCESS');
      const raw = exited.stdout.trim().split('\n');
      const lines = raw.map((line) => JSON.parse(line) as { msg: string; active?: number; signal?: string });
      expect(lines.find((l) => l.msg === 'worker started')).toMatchObject({ fairOwners: true, schedules: ['cli.every-minute'], scheduleRefreshMs: 30_000 });
      expect(lines.find((l) => l.msg === 'stop signal received')).toMatchObject({ signal: 'SIGTERM' });
      expect(lines.filter((l) => l.msg === 'worker stopping')).toEqual([expect.objectContaining({ active: 1, buffered: 0 })]);
      // one workerId key per line (a second one, from a base and a child binding, made the JSON ambiguous)
      for (const line of raw) expect(line.split('"workerId"'), line).toHaveLength(2);
      expect(lines.at(-1)!.msg).toBe('worker stopped');
    });
  }

  it('exits 0 with one JSON document, 3 with a JSON error for an unknown id, 2 for a bad flag', async () => {
    const env = { TASKLEASE_DATABASE_URL: `sqlite:${join(dir, 'codes.db')}` };
    expect((await cli(['migrate'], { env })).code).toBe(0);
    const [listed, unknown, badFlag] = await Promise.all([
      spawnCli(['list', '--json'], { env }).exited,
      spawnCli(['get', 'no-such-task', '--json'], { env }).exited,
      spawnCli(['list', '--limit', 'many'], { env }).exited,
    ]);
    expect([listed.code, listed.json()]).toEqual([0, { tasks: [], nextCursor: null }]);
    expect([unknown.code, unknown.json()]).toEqual([3, { error: { code: 'NOT_FOUND', message: 'task "no-such-task" not found' } }]);
    expect(unknown.stderr).toBe('error NOT_FOUND: task "no-such-task" not found\n');
    expect([badFlag.code, badFlag.stdout, badFlag.stderr]).toEqual([
      2,
      '',
      expect.stringContaining("error USAGE: option '-n, --limit <n>' argument 'many' is invalid"),
    ]);
  });
});

/**
 * `tasklease move` as a shell runs it: a real process moving a SQLite file to
 * PostgreSQL, killed while it waits for a lease held on the source, then run
 * again to the end (exit 0, its phases on stderr, the verified counts on
 * stdout); and its refusal of a target in use (exit 1, the error's code).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { MoveReport } from '../../src/client/move.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { cli, spawnCli } from './harness.js';

const pgAvailable = await postgresAvailable('test/cli/move.test.ts');

describeOnServer(pgAvailable, 'PostgreSQL', 'tasklease move (process)', () => {
  let dir: string;
  const schemas: TestSchema[] = [];
  const closers: (() => Promise<void>)[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-cli-move-'));
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    for (const schema of schemas) await schema.drop();
  });

  async function targetUrl(): Promise<string> {
    const schema = await createTestSchema();
    schemas.push(schema);
    return `${PG_URL}?schema=${schema.name}&poolSize=2`;
  }

  it('moves SQLite to PostgreSQL; killed while it waits for a lease, a re-run resumes and exits 0 with the verified counts', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = defineTask({ type: 'cli.slow', execute: async () => (await held, TaskResult.success({})) });
    const idle = defineTask({ type: 'cli.idle' });
    const path = join(dir, 'source.db');
    const source = new SqliteStore({ path });
    closers.push(() => source.close());
    await source.migrate();
    const client = createClient({ store: source, tasks: [slow, idle] });
    const running = (await client.submit(slow, {})).task.id;
    await client.submitMany(Array.from({ length: 25 }, () => ({ type: idle.type, payload: {} })));
    const worker: Worker = createWorker({ store: source, tasks: [slow], ...FAST_WORKER });
    closers.push(() => worker.stop());
    await worker.start();
    await waitFor(async () => (await source.getTask({ id: running, scope: Scope.global() }))?.status === 'RUNNING', 'the slow task to run');

    const to = await targetUrl();
    const first = spawnCli(['move', '--from', `sqlite:${path}`, '--to', to, '--batch', '5']);
    await waitFor(() => first.output().stderr.includes('move: waiting for the leases held on the source'), 'the move to wait for the lease', 30_000);
    first.child.kill('SIGKILL');
    expect((await first.exited).code).not.toBe(0);

    release();
    await waitFor(async () => (await source.getTask({ id: running, scope: Scope.global() }))?.status === 'SUCCESS', 'the slow task to finish');
    const second = await spawnCli(['move', '--from', `sqlite:${path}`, '--to', to, '--batch', '5']).exited;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('move: copying everything else');
    expect(second.stderr).toContain('move: verifying counts');
    expect(second.stdout).toMatch(/resumed after phase source-stopped/);
    expect(second.stdout).toMatch(/QUEUED\s+25\s+25/);
    expect(second.stdout).toMatch(/SUCCESS\s+1\s+1/);

    const third = await cli(['move', '--from', `sqlite:${path}`, '--to', to, '--json']);
    expect(third.code, third.stderr).toBe(0);
    const report = third.json<MoveReport>();
    expect(report.resumedAfter).toBe('verified');
    expect(report.target.tasks).toEqual(report.source.tasks);
    const target = new PostgresStore({ connectionString: PG_URL, schema: new URL(to).searchParams.get('schema')!, poolSize: 1 });
    closers.push(() => target.close());
    expect(await target.countByStatus({ scope: Scope.global() })).toMatchObject({ QUEUED: 25, SUCCESS: 1 });
  }, 90_000);

  it('refuses a target in use: exit 1 and MOVE_TARGET_NOT_EMPTY', async () => {
    const path = join(dir, 'other.db');
    const source = new SqliteStore({ path });
    await source.migrate();
    await source.close();
    const to = await targetUrl();
    const target = new PostgresStore({ connectionString: PG_URL, schema: new URL(to).searchParams.get('schema')!, poolSize: 1 });
    closers.push(() => target.close());
    await target.migrate();
    const theirs = defineTask({ type: 'theirs' });
    await createClient({ store: target, tasks: [theirs] }).submit(theirs, {});
    const result = await cli(['move', '--from', `sqlite:${path}`, '--to', to]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error MOVE_TARGET_NOT_EMPTY: the target holds 1 tasks that no move put there/m);
  });
});

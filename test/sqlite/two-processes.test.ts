import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { Scope } from '../../src/core/scope.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { defineTask } from '../../src/core/definition.js';
import { waitFor } from '../helpers/wait.js';

/** Every worker process a test started: a test that fails half-way must not leave them running. */
const started = new Set<ChildProcess>();

function startWorker(path: string, pollIntervalMs = 20, barrier?: string): { child: ChildProcess; output: Promise<string>; ready: Promise<void> } {
  const args = [join(import.meta.dirname, 'worker-child.ts'), path, String(pollIntervalMs), ...(barrier ? [barrier] : [])];
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.add(child);
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const output = new Promise<string>((resolve) =>
    child.on('exit', () => {
      started.delete(child);
      resolve(text);
    }),
  );
  const ready = waitFor(() => text.includes('ready'), 'worker process to start', 30_000).then(() => undefined);
  return { child, output, ready };
}

describe('two worker processes on one SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-mp-'));
  afterEach(() => {
    for (const child of started) child.kill('SIGKILL');
    started.clear();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('complete 2,000 tasks, each exactly once', async () => {
    const path = join(dir, 'shared.db');
    const store = new SqliteStore({ path });
    await store.migrate();
    const client = createClient({ store, tasks: [defineTask({ type: 'count' })] });
    const barrier = join(dir, 'barrier');
    mkdirSync(barrier);
    const workers = [startWorker(path, 20, barrier), startWorker(path, 20, barrier)];
    await Promise.all(workers.map((w) => w.ready));
    await client.submitMany(Array.from({ length: 2000 }, (_, i) => ({ type: 'count', payload: { i } })));
    await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).SUCCESS === 2000, '2,000 successes', 60_000, 100);
    for (const { child } of workers) child.kill('SIGTERM');
    const reports = (await Promise.all(workers.map((w) => w.output))).map((text) => JSON.parse(text.trim().split('\n').pop()!) as { executed: string[] });
    const all = reports.flatMap((r) => r.executed);
    expect(all).toHaveLength(2000);
    expect(new Set(all).size).toBe(2000);
    // both processes took part (the start barrier makes sure of it)
    for (const report of reports) expect(report.executed.length).toBeGreaterThan(0);
    // one attempt row per task, each a success
    const sample = (await store.listTasks({ scope: Scope.global(), limit: 1000 })).tasks;
    for (const task of sample.slice(0, 200)) {
      expect((await store.listAttempts({ taskId: task.id })).map((a) => a.outcome)).toEqual(['SUCCESS']);
    }
    expect(sample.every((t) => t.attemptCount === 1)).toBe(true);
    await store.close();
  });

  it('wakes an idle worker in another process at once (its -wal file changed), long before its next poll', async () => {
    const path = join(dir, 'wake.db');
    const store = new SqliteStore({ path });
    await store.migrate();
    const client = createClient({ store, tasks: [defineTask({ type: 'count' })] });
    const worker = startWorker(path, 60_000);
    await worker.ready;
    // A first task shows the worker is past its start-up claims; after it, the next poll is a minute away.
    const { task: first } = await client.submit('count', { i: 0 });
    await waitFor(async () => (await store.getTask({ id: first.id, scope: Scope.global() }))?.status === 'SUCCESS', 'the first task', 20_000);
    await waitFor(async () => (await store.leasedCounts()).count === undefined, 'the worker to be idle');
    const submittedAt = Date.now();
    const { task } = await client.submit('count', { i: 1 });
    await waitFor(async () => (await store.getTask({ id: task.id, scope: Scope.global() }))?.status === 'SUCCESS', 'the other process to run it', 20_000);
    expect(Date.now() - submittedAt).toBeLessThan(5_000);
    worker.child.kill('SIGTERM');
    await worker.output;
    await store.close();
  });
});

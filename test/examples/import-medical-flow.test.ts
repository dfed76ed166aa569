/**
 * The medical import as a flow (examples/import-medical-flow.ts) run by a real
 * worker on SQLite and PostgreSQL: split fans out parts, the parts import in
 * batch-handler calls, merge reports, report summarizes — the same counts,
 * report and per-row idempotence as the single-task import; a failing part
 * cancels the merge and the report still runs (CONTINUE); retryFlow finishes it.
 * On SQLite through the test kit (drain() runs the flow one attempt at a time,
 * the clock moved to each retry), on PostgreSQL by a running worker, where the
 * parts also share batch calls.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimsCsv } from './claims-fixture.js';
import { createMedicalImportFlow, PART, submitMedicalImportFlow, type NewKeysSink } from '../../examples/import-medical-flow.js';
import { JsonLinesSink } from '../../examples/medical-sink.js';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { Scope } from '../../src/core/scope.js';
import { isTerminal } from '../../src/core/status.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { createTestKit, type TestKit } from '../../src/testing/index.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { onPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { FAST, SETTLE_MS } from '../observe/suite.js';

/** What a case needs: a client and store, a task's end (once the flow has run to it), and the batch calls made. */
interface Harness {
  client: TaskLeaseClient;
  store: Store;
  ended(id: string): Promise<Task>;
  /** executeBatch calls; null where the runner gives each task a call of its own (the kit: one attempt at a time). */
  batchCalls(): number | null;
}
type Harnesses = (tasks: ReturnType<typeof createMedicalImportFlow>['tasks']) => Promise<Harness>;

/** SQLite: the test kit drains the flow (moving the clock to each retry), then the task is read. */
function kitHarnesses(): Harnesses {
  let kit: TestKit | null = null;
  afterEach(async () => {
    await kit?.close();
    kit = null;
  });
  return async (tasks) => {
    const k = (kit = await createTestKit({ tasks }));
    const ended = async (id: string): Promise<Task> => {
      await k.drain({ advanceTime: true });
      const task = (await k.client.get(id))!;
      if (!isTerminal(task.status)) throw new Error(`task ${id} is ${task.status} after the drain`);
      return task;
    };
    return { client: k.client, store: k.store, ended, batchCalls: () => null };
  };
}

/** A running worker (8 slots: the parts share batch calls) on a store per test, the end read by polling. */
function workerHarnesses(factory: StoreFactory): Harnesses {
  const env = perTestStore(factory);
  return async (tasks) => {
    let calls = 0;
    const worker = env.track(createWorker({ store: env.store, tasks, ...FAST, concurrency: 8, typeConcurrency: 8 }));
    worker.on('batchStarted', () => void (calls += 1));
    worker.start();
    const ended = (id: string): Promise<Task> =>
      waitFor(
        async () => {
          const task = await env.store.getTask({ id, scope: Scope.global() });
          return task && isTerminal(task.status) ? task : null;
        },
        `task ${id} to end`,
        SETTLE_MS,
      );
    return { client: createClient({ store: env.store, tasks }), store: env.store, ended, batchCalls: () => calls };
  };
}

function runFlowImportSuite(name: string, harnesses: () => Harnesses): void {
  describe(`the medical import flow on ${name}`, () => {
    const harness = harnesses();
    let dataDir: string;
    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'tasklease-import-flow-'));
      writeFileSync(join(dataDir, 'claims.csv'), claimsCsv());
    });
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    const start = async (sink?: NewKeysSink) => {
      const flow = createMedicalImportFlow({ dataDir, ...(sink ? { sink } : {}) });
      const h = await harness(flow.tasks);
      return { client: h.client, store: h.store, ended: h.ended, calls: h.batchCalls };
    };

    it('split → parts (batched) → merge → report: the same counts and report as the single import, each claim once', async () => {
      const { client, store, ended, calls } = await start();
      const flow = await submitMedicalImportFlow(client, 'claims.csv', { partSize: 25 });
      const report = await ended(flow.tasks.report!.id);
      expect(report.status).toBe('SUCCESS');
      const merge = (await store.getTask({ id: flow.tasks.merge!.id, scope: Scope.global() }))!;
      expect(merge.status).toBe('PARTIAL_SUCCESS');
      expect(merge.result).toMatchObject({ imported: 240, alreadyImported: 4, rejected: 6, parts: 10 });
      const reported = readFileSync(merge.artifactId!, 'utf8')
        .trim()
        .split('\n')
        .slice(2)
        .map((line) => Number(line.split(',')[0]));
      expect(reported).toEqual([102, 103, 104, 247, 248, 249]);
      expect(report.result).toMatchObject({ merge: 'PARTIAL_SUCCESS', imported: 240, rejected: 6 });
      const claims = readFileSync(join(dataDir, 'claims.jsonl'), 'utf8').trim().split('\n');
      expect(claims).toHaveLength(240);
      // The whole flow: split, its 10 parts, merge, report; the parts in fewer calls than parts.
      const graph = await client.flow(flow.flowId);
      expect(graph.tasks.filter((t) => t.taskType === PART)).toHaveLength(10);
      expect(graph.counts).toEqual({ SUCCESS: 12, PARTIAL_SUCCESS: 1 });
      const batchCalls = calls();
      if (batchCalls !== null) expect(batchCalls).toBeLessThan(10);
      // The split waited for its parts without spending an attempt: two runs, one attempt of its cycle.
      const split = (await store.getTask({ id: flow.tasks.split!.id, scope: Scope.global() }))!;
      expect((await store.listAttempts({ taskId: split.id })).map((a) => a.outcome)).toEqual(['AWAITING', 'SUCCESS']);
      // The same file again: nothing imported twice.
      const again = await submitMedicalImportFlow(client, 'claims.csv', { partSize: 60 });
      await ended(again.tasks.report!.id);
      expect((await store.getTask({ id: again.tasks.merge!.id, scope: Scope.global() }))!.result).toMatchObject({
        imported: 0,
        alreadyImported: 244,
        rejected: 6,
      });
      expect(readFileSync(join(dataDir, 'claims.jsonl'), 'utf8').trim().split('\n')).toHaveLength(240);
    });

    it('a part that fails for good cancels the split and the merge; the report runs anyway; retryFlow finishes the import', async () => {
      const files = new JsonLinesSink(join(dataDir, 'claims.jsonl'));
      let broken = true;
      const sink: NewKeysSink = {
        writeNew: (rows) =>
          broken && rows.some((r) => r.record.patientId === 'P1050') ? Promise.reject(new Error('the database refused a row')) : files.writeNew(rows),
      };
      const { client, store, ended } = await start(sink);
      const flow = await submitMedicalImportFlow(client, 'claims.csv', { partSize: 250 });
      const report = await ended(flow.tasks.report!.id);
      expect(report.result).toMatchObject({ merge: 'CANCELLED', error: 'PARENT_FAILED' });
      expect((await store.getTask({ id: flow.tasks.split!.id, scope: Scope.global() }))!).toMatchObject({
        status: 'CANCELLED',
        lastErrorCode: 'PARENT_FAILED',
      });
      broken = false;
      // The failed part runs again; the split and the merge wait for it again, then run.
      expect(await client.retryFlow(flow.flowId)).toBe(1);
      const merge = await ended(flow.tasks.merge!.id);
      expect(merge.status).toBe('PARTIAL_SUCCESS');
      expect(merge.result).toMatchObject({ imported: 240, rejected: 6 });
    });
  });
}

runFlowImportSuite('SQLite (the test kit)', kitHarnesses);
await onPostgres('test/examples/import-medical-flow.test.ts', 'the medical import flow', (factory) =>
  runFlowImportSuite(factory.dialect, () => workerHarnesses(factory)),
);

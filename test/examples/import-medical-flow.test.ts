/**
 * The medical import as a flow (examples/import-medical-flow.ts) run by a real
 * worker on SQLite and PostgreSQL: split fans out parts, the parts import in
 * batch-handler calls, merge reports, report summarizes — the same counts,
 * report and per-row idempotence as the single-task import; a failing part
 * cancels the merge and the report still runs (CONTINUE); retryFlow finishes it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimsCsv } from './claims-fixture.js';
import { createMedicalImportFlow, PART, submitMedicalImportFlow, type NewKeysSink } from '../../examples/import-medical-flow.js';
import { JsonLinesSink } from '../../examples/medical-sink.js';
import { createClient } from '../../src/client/client.js';
import { Scope } from '../../src/core/scope.js';
import { isTerminal } from '../../src/core/status.js';
import type { Task } from '../../src/core/task.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { onPostgres } from '../helpers/postgres.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';
import { FAST, SETTLE_MS } from '../observe/suite.js';

function runFlowImportSuite(factory: StoreFactory): void {
  describe(`the medical import flow on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let dataDir: string;
    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'tasklease-import-flow-'));
      writeFileSync(join(dataDir, 'claims.csv'), claimsCsv());
    });
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    const start = (sink?: NewKeysSink) => {
      const flow = createMedicalImportFlow({ dataDir, ...(sink ? { sink } : {}) });
      const client = createClient({ store: env.store, tasks: flow.tasks });
      let calls = 0;
      const worker = env.track(createWorker({ store: env.store, tasks: flow.tasks, ...FAST, concurrency: 8, typeConcurrency: 8 }));
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
      return { client, ended, calls: () => calls };
    };

    it('split → parts (batched) → merge → report: the same counts and report as the single import, each claim once', async () => {
      const { client, ended, calls } = start();
      const flow = await submitMedicalImportFlow(client, 'claims.csv', { partSize: 25 });
      const report = await ended(flow.tasks.report!.id);
      expect(report.status).toBe('SUCCESS');
      const merge = (await env.store.getTask({ id: flow.tasks.merge!.id, scope: Scope.global() }))!;
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
      expect(calls()).toBeLessThan(10);
      // The split waited for its parts without spending an attempt: two runs, one attempt of its cycle.
      const split = (await env.store.getTask({ id: flow.tasks.split!.id, scope: Scope.global() }))!;
      expect((await env.store.listAttempts({ taskId: split.id })).map((a) => a.outcome)).toEqual(['AWAITING', 'SUCCESS']);
      // The same file again: nothing imported twice.
      const again = await submitMedicalImportFlow(client, 'claims.csv', { partSize: 60 });
      await ended(again.tasks.report!.id);
      expect((await env.store.getTask({ id: again.tasks.merge!.id, scope: Scope.global() }))!.result).toMatchObject({
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
      const { client, ended } = start(sink);
      const flow = await submitMedicalImportFlow(client, 'claims.csv', { partSize: 250 });
      const report = await ended(flow.tasks.report!.id);
      expect(report.result).toMatchObject({ merge: 'CANCELLED', error: 'PARENT_FAILED' });
      expect((await env.store.getTask({ id: flow.tasks.split!.id, scope: Scope.global() }))!).toMatchObject({
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

runFlowImportSuite(sqliteFactory);
await onPostgres('test/examples/import-medical-flow.test.ts', 'the medical import flow', runFlowImportSuite);

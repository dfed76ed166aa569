/**
 * The IMPORT.MEDICAL example run by a real worker on SQLite and PostgreSQL:
 * its outcome, progress and report; per-row idempotence across a second
 * import of the same file; a cancellation that stops it between batches; a
 * file it cannot read at all failing without retries.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimsCsv } from './claims-fixture.js';
import importMedical, { createMedicalImportTask, IMPORT_MEDICAL, tasks as moduleTasks } from '../../examples/import-medical.js';
import type { ClaimRecord } from '../../examples/medical-csv.js';
import { JsonLinesSink, type ClaimSink } from '../../examples/medical-sink.js';
import { createClient } from '../../src/client/client.js';
import type { AnyTaskDefinition } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { isTerminal } from '../../src/core/status.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { onPostgres } from '../helpers/postgres.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';
import { FAST, SETTLE_MS } from '../observe/suite.js';

function runImportSuite(factory: StoreFactory): void {
  describe(`IMPORT.MEDICAL on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let dataDir: string;
    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'tasklease-import-'));
      writeFileSync(join(dataDir, 'claims.csv'), claimsCsv());
    });
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    const run = (store: Store, definition: AnyTaskDefinition) => {
      const client = createClient({ store, tasks: [definition] });
      const worker = env.track(createWorker({ store, tasks: [definition], ...FAST, cancelCheckIntervalMs: 0 })).start();
      const finished = async (id: string): Promise<Task> =>
        waitFor(
          async () => {
            const task = await store.getTask({ id, scope: Scope.global() });
            return task && isTerminal(task.status) ? task : null;
          },
          `import ${id} to finish`,
          SETTLE_MS,
        );
      return { client, worker, finished };
    };
    const claimLines = (): string[] => readFileSync(join(dataDir, 'claims.jsonl'), 'utf8').trim().split('\n');

    it('imports the good rows once, reports the bad ones, and a second import of the file adds nothing', async () => {
      const { client, finished } = run(env.store, createMedicalImportTask({ dataDir }));
      const first = await finished((await client.submit(IMPORT_MEDICAL, { csvPath: 'claims.csv', batchSize: 50 })).task.id);
      expect(first.status).toBe('PARTIAL_SUCCESS');
      expect(first.attemptCount).toBe(1);
      const report = join(dataDir, 'reports', `import-medical-${first.id}.csv`);
      expect(first.result).toEqual({ imported: 240, alreadyImported: 4, rejected: 6, report });
      expect(first.progress).toMatchObject({ total: 250, processed: 250, succeeded: 240, failed: 6, skipped: 4, message: 'batch 5 of 5' });
      expect(first.artifactId).toBe(report);
      // Lines in the file (the header is line 1): the three bad rows after the first 100 claims, the last three near the end.
      const reported = readFileSync(report, 'utf8')
        .trim()
        .split('\n')
        .slice(2)
        .map((line) => Number(line.split(',')[0]));
      expect(reported).toEqual([102, 103, 104, 247, 248, 249]);
      expect(readFileSync(report, 'utf8')).toContain('"visit_date must be a date YYYY-MM-DD"');
      expect(readFileSync(report, 'utf8')).not.toContain('Patient'); // no patient data in the artifact
      const keys = claimLines().map((line) => (JSON.parse(line) as { key: string }).key);
      expect(new Set(keys).size).toBe(240);
      expect(keys).toHaveLength(240);

      const again = await finished((await client.submit(IMPORT_MEDICAL, { csvPath: 'claims.csv', batchSize: 70 })).task.id);
      expect(again.result).toMatchObject({ imported: 0, alreadyImported: 244, rejected: 6 });
      expect(claimLines()).toHaveLength(240);
    });

    it('stops between batches when cancelled: whole batches written, nothing after', async () => {
      let releaseSecond!: () => void;
      const secondBatch = new Promise<void>((resolve) => (releaseSecond = resolve));
      let secondStarted!: () => void;
      const secondReached = new Promise<void>((resolve) => (secondStarted = resolve));
      const files = new JsonLinesSink(join(dataDir, 'claims.jsonl'));
      let batches = 0;
      const sink: ClaimSink = {
        async writeBatch(rows: { key: string; record: ClaimRecord }[]) {
          if (++batches === 2) {
            secondStarted();
            await secondBatch; // the test cancels while this batch is being written
          }
          return files.writeBatch(rows);
        },
      };
      const { client, worker, finished } = run(env.store, createMedicalImportTask({ dataDir, sink }));
      const { task } = await client.submit(IMPORT_MEDICAL, { csvPath: 'claims.csv', batchSize: 50 });
      await secondReached;
      await client.requestCancellation(task.id);
      releaseSecond();
      const cancelled = await finished(task.id);
      expect(cancelled.status).toBe('CANCELLED');
      // The task ends CANCELLED at once (its signal aborted); the handler finishes the batch it is writing,
      // then its cancellation check before the next batch stops it. The worker's slot frees when it has.
      await waitFor(() => worker.stats().active === 0, 'the handler to stop');
      expect(batches).toBe(2);
      expect(claimLines()).toHaveLength(100); // the first 100 rows are all good claims
    });

    it('fails a file with the wrong header at once, without retries', async () => {
      writeFileSync(join(dataDir, 'wrong.csv'), 'id,name\nP1000,x\n');
      const { client, finished } = run(env.store, createMedicalImportTask({ dataDir }));
      const failed = await finished((await client.submit(IMPORT_MEDICAL, { csvPath: 'wrong.csv' })).task.id);
      expect(failed).toMatchObject({ status: 'FAILED', attemptCount: 1, lastErrorCode: 'HANDLER_ERROR' });
    });
  });
}

describe('the example module', () => {
  it('exports its definition for a worker to load by path', () => {
    expect(importMedical.type).toBe(IMPORT_MEDICAL);
    expect(typeof importMedical.execute).toBe('function');
    expect(moduleTasks).toEqual([importMedical]);
  });
});

runImportSuite(sqliteFactory);
await onPostgres('test/examples/import-medical.test.ts', 'IMPORT.MEDICAL', runImportSuite);

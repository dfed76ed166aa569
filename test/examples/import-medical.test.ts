/**
 * The IMPORT.MEDICAL example: its outcome, progress and report; per-row
 * idempotence across a second import of the same file; a cancellation that
 * stops it between batches; a file it cannot read at all failing without
 * retries. On SQLite through the test kit (tasklease/testing: the worker's
 * real execute path, run on demand); on PostgreSQL by a running worker.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimsCsv } from './claims-fixture.js';
import importMedical, { createMedicalImportTask, IMPORT_MEDICAL, tasks as moduleTasks } from '../../examples/import-medical.js';
import type { ClaimRecord } from '../../examples/medical-csv.js';
import { JsonLinesSink, type ClaimSink } from '../../examples/medical-sink.js';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import type { AnyTaskDefinition } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { isTerminal } from '../../src/core/status.js';
import type { Task } from '../../src/core/task.js';
import { createTestKit, type TestKit } from '../../src/testing/index.js';
import { createWorker } from '../../src/worker/worker.js';
import { perTestStore } from '../helpers/per-test.js';
import { onPostgres } from '../helpers/postgres.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { FAST, SETTLE_MS } from '../observe/suite.js';

/** What a case needs: a client, the task's end (once it has run), and whether a handler still runs. */
interface Harness {
  client: TaskLeaseClient;
  finished(id: string): Promise<Task>;
  handlersRunning(): number;
}
type Harnesses = (definition: AnyTaskDefinition) => Promise<Harness>;

/** SQLite: the test kit runs the task when asked, attempt after attempt, to its end. */
function kitHarnesses(): Harnesses {
  let kit: TestKit | null = null;
  afterEach(async () => {
    await kit?.close();
    kit = null;
  });
  return async (definition) => {
    const k = (kit = await createTestKit({ tasks: [definition] }));
    return { client: k.client, finished: async (id) => (await k.run(id)).task, handlersRunning: () => k.worker.stats().active };
  };
}

/** A running worker on a store per test, the end read by polling. */
function workerHarnesses(factory: StoreFactory): Harnesses {
  const env = perTestStore(factory);
  return async (definition) => {
    const store = env.store;
    const worker = env.track(createWorker({ store, tasks: [definition], ...FAST, cancelCheckIntervalMs: 0 })).start();
    const finished = (id: string): Promise<Task> =>
      waitFor(
        async () => {
          const task = await store.getTask({ id, scope: Scope.global() });
          return task && isTerminal(task.status) ? task : null;
        },
        `import ${id} to finish`,
        SETTLE_MS,
      );
    return { client: createClient({ store, tasks: [definition] }), finished, handlersRunning: () => worker.stats().active };
  };
}

function runImportSuite(name: string, harnesses: () => Harnesses): void {
  describe(`IMPORT.MEDICAL on ${name}`, () => {
    const harness = harnesses();
    let dataDir: string;
    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'tasklease-import-'));
      writeFileSync(join(dataDir, 'claims.csv'), claimsCsv());
    });
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    const claimLines = (): string[] => readFileSync(join(dataDir, 'claims.jsonl'), 'utf8').trim().split('\n');

    it('imports the good rows once, reports the bad ones, and a second import of the file adds nothing', async () => {
      const { client, finished } = await harness(createMedicalImportTask({ dataDir }));
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
      const { client, finished, handlersRunning } = await harness(createMedicalImportTask({ dataDir, sink }));
      const { task } = await client.submit(IMPORT_MEDICAL, { csvPath: 'claims.csv', batchSize: 50 });
      const ended = finished(task.id);
      await secondReached;
      await client.requestCancellation(task.id);
      releaseSecond();
      const cancelled = await ended;
      expect(cancelled.status).toBe('CANCELLED');
      // The task ends CANCELLED at once (its signal aborted); the handler finishes the batch it is writing,
      // then its cancellation check before the next batch stops it. The worker's slot frees when it has.
      await waitFor(() => handlersRunning() === 0, 'the handler to stop');
      expect(batches).toBe(2);
      expect(claimLines()).toHaveLength(100); // the first 100 rows are all good claims
    });

    it('fails a file with the wrong header at once, without retries', async () => {
      writeFileSync(join(dataDir, 'wrong.csv'), 'id,name\nP1000,x\n');
      const { client, finished } = await harness(createMedicalImportTask({ dataDir }));
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

runImportSuite('SQLite (the test kit)', kitHarnesses);
await onPostgres('test/examples/import-medical.test.ts', 'IMPORT.MEDICAL', (factory) => runImportSuite(factory.dialect, () => workerHarnesses(factory)));

/**
 * graphile-worker 0.17 in its batched mode: the pool locks up to
 * `localQueue.size` jobs per fetch and serves its workers from memory, and
 * completions are batched (`completeJobBatchDelay: 0` = one statement per
 * tick). Bulk enqueue uses `addJobs` (one statement per call).
 */
import { fileURLToPath } from 'node:url';
import { Logger, makeWorkerUtils, runMigrations, type WorkerUtils } from 'graphile-worker';
import { PG_URL, chunks, ownedName, quoteIdent } from '../config.js';
import { TASK_TYPE, type LatencyPayload, type SystemAdapter } from '../types.js';
import { dropSchema, pgQuery, probePostgres } from './postgres.js';

export const LOCAL_QUEUE_SIZE = 500;
export const COMPLETE_JOB_BATCH_DELAY = 0;

/** graphile-worker logs every start and stop at info level; the bench keeps only errors. */
export const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`[graphile-worker] ${message}`);
});

export interface GraphileWorkerOptions {
  connectionString: string;
  schema: string;
  localQueueSize: number;
  completeJobBatchDelay: number;
}

export function graphileWorker(): SystemAdapter {
  const schema = ownedName('graphile');
  let ready = false;
  let utils: Promise<WorkerUtils> | null = null;
  const need = (): Promise<WorkerUtils> => {
    if (!ready) throw new Error('graphile-worker: setup() first');
    utils ??= makeWorkerUtils({ connectionString: PG_URL, schema, logger: quietLogger });
    return utils;
  };
  const release = async (): Promise<void> => {
    const open = utils;
    utils = null;
    await (await open)?.release();
  };

  return {
    name: 'graphile-worker',
    kind: 'peer',
    workerScript: fileURLToPath(new URL('../workers/graphile-worker.ts', import.meta.url)),
    pollPeriodMs: 0,
    supportsLimits: false,
    workScope: { dialect: 'postgres', schema },
    probe: probePostgres,
    async setup() {
      await dropSchema(schema);
      await runMigrations({ connectionString: PG_URL, schema, logger: quietLogger });
      ready = true;
      await need();
    },
    async teardown() {
      ready = false;
      await release();
      await dropSchema(schema);
    },
    release,
    async enqueueBulk(count, batchSize) {
      const { addJobs } = await need();
      for (const size of chunks(count, batchSize)) {
        await addJobs(Array.from({ length: size }, () => ({ identifier: TASK_TYPE, payload: {} })));
      }
    },
    async enqueueOne(payload: LatencyPayload) {
      await (await need()).addJob(TASK_TYPE, payload);
    },
    async remaining() {
      const rows = await pgQuery<{ n: number }>(`select count(*)::int as n from ${quoteIdent(schema)}._private_jobs`);
      return rows[0]?.n ?? 0;
    },
    workerOptions(): Record<string, unknown> {
      const options: GraphileWorkerOptions = {
        connectionString: PG_URL,
        schema,
        localQueueSize: LOCAL_QUEUE_SIZE,
        completeJobBatchDelay: COMPLETE_JOB_BATCH_DELAY,
      };
      return { ...options };
    },
    settings({ concurrency }) {
      return {
        concurrency: `${concurrency} (concurrentJobs), pg pool of ${Math.max(10, concurrency + 2)} connections`,
        batching: `preset.worker.localQueue.size = ${LOCAL_QUEUE_SIZE}, completeJobBatchDelay = ${COMPLETE_JOB_BATCH_DELAY}`,
        enqueue: 'workerUtils.addJobs (bulk), workerUtils.addJob (latency)',
        wake: 'LISTEN/NOTIFY (pollInterval default 2000 ms as fallback)',
        'finished jobs': 'deleted on completion (graphile-worker default)',
      };
    },
    packages: () => ['graphile-worker', 'pg'],
  };
}

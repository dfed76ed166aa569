/**
 * pg-boss 10 at its fastest documented settings: `concurrency` polling loops
 * (`work()` called once per slot, pg-boss 10's way to run jobs in parallel),
 * each fetching a batch (`batchSize`) and completing it with one statement,
 * polling at the documented minimum interval of 0.5 s. pg-boss 10 has no
 * LISTEN/NOTIFY wake-up, so an idle worker finds a new job by polling.
 * Bulk enqueue uses `insert()` (one statement per call).
 */
import { fileURLToPath } from 'node:url';
import PgBoss from 'pg-boss';
import { PG_URL, chunks, ownedName, quoteIdent } from '../config.js';
import { TASK_TYPE, type LatencyPayload, type SystemAdapter } from '../types.js';
import { dropSchema, pgQuery, probePostgres } from './postgres.js';

/** Jobs per fetch in each polling loop; the handler gets the whole batch. */
export const BATCH_SIZE = 100;
/** pg-boss 10 rejects anything below 0.5 s (MIN_POLLING_INTERVAL_MS). */
export const POLLING_INTERVAL_SECONDS = 0.5;

export interface PgBossOptions {
  connectionString: string;
  schema: string;
  batchSize: number;
  pollingIntervalSeconds: number;
}

export function pgBoss(): SystemAdapter {
  const schema = ownedName('pgboss');
  let ready = false;
  let boss: Promise<PgBoss> | null = null;
  // The producer neither supervises nor schedules: maintenance would compete with the measurement.
  const open = async (): Promise<PgBoss> => {
    const instance = new PgBoss({ connectionString: PG_URL, schema, supervise: false, schedule: false });
    instance.on('error', (error) => console.error(`[pg-boss producer] ${error.message}`));
    await instance.start();
    return instance;
  };
  const need = (): Promise<PgBoss> => {
    if (!ready) throw new Error('pg-boss: setup() first');
    boss ??= open();
    return boss;
  };
  const release = async (): Promise<void> => {
    const instance = boss;
    boss = null;
    await (await instance)?.stop({ graceful: false, close: true, wait: true });
  };

  return {
    name: 'pg-boss',
    kind: 'peer',
    workerScript: fileURLToPath(new URL('../workers/pg-boss.ts', import.meta.url)),
    pollPeriodMs: POLLING_INTERVAL_SECONDS * 1000,
    supportsLimits: false,
    workScope: { dialect: 'postgres', schema },
    probe: probePostgres,
    async setup() {
      await dropSchema(schema);
      ready = true;
      await (await need()).createQueue(TASK_TYPE);
    },
    async teardown() {
      ready = false;
      await release();
      await dropSchema(schema);
    },
    release,
    async enqueueBulk(count, batchSize) {
      const instance = await need();
      for (const size of chunks(count, batchSize)) {
        await instance.insert(Array.from({ length: size }, () => ({ name: TASK_TYPE, data: {} })));
      }
    },
    async enqueueOne(payload: LatencyPayload) {
      await (await need()).send(TASK_TYPE, payload);
    },
    async remaining() {
      const rows = await pgQuery<{ n: number }>(`select count(*)::int as n from ${quoteIdent(schema)}.job where name = $1 and state < 'completed'`, [
        TASK_TYPE,
      ]);
      return rows[0]?.n ?? 0;
    },
    workerOptions(): Record<string, unknown> {
      const options: PgBossOptions = {
        connectionString: PG_URL,
        schema,
        batchSize: BATCH_SIZE,
        pollingIntervalSeconds: POLLING_INTERVAL_SECONDS,
      };
      return { ...options };
    },
    settings({ concurrency }) {
      return {
        concurrency: `${concurrency} work() loops in one process (pg-boss 10 has no per-worker concurrency option)`,
        batching: `work({ batchSize: ${BATCH_SIZE}, pollingIntervalSeconds: ${POLLING_INTERVAL_SECONDS} }); one complete() per batch`,
        enqueue: 'insert() (bulk), send() (latency)',
        wake: 'polling only (pg-boss 10 has no LISTEN/NOTIFY); a loop that found jobs still waits out the rest of its interval',
        instances: 'supervise: false, schedule: false on producer and worker; migrate: false on the worker',
        'finished jobs': 'kept as state completed (pg-boss default)',
      };
    },
    packages: () => ['pg-boss', 'pg'],
  };
}

/**
 * tasklease on each of its stores. Headline settings (issue 4): local
 * concurrency as asked, limit machinery active but configured high so that
 * it does not bind (as the peers run without limits), and a prefetch buffer
 * (the counterpart of graphile-worker's localQueue). The limits workload
 * passes binding limits instead.
 */
import { fileURLToPath } from 'node:url';
import type { TaskLeaseClient } from '../../src/index.js';
import type { Store } from '../../src/store/types.js';
import { chunks } from '../config.js';
import { TASK_TYPE, type LatencyPayload, type Limits, type SystemAdapter } from '../types.js';
import { library } from './tasklease-lib.js';
import { createNamespace, dropNamespace, openStore, probeStore, storeSpec, type Dialect, type StoreSpec } from './tasklease-stores.js';

/** Tasks leased ahead of free slots (graphile-worker's localQueue is 500). */
export const PREFETCH = 500;
/** Limits high enough never to bind in the headline lines. */
export const HIGH_LIMIT = 1_000_000;
/** MysqlStore's default wakeupPollMs (src/store/mysql/options.ts); the bench leaves it at its default. */
const DEFAULT_WAKEUP_POLL_MS = 10;

export interface TaskleaseWorkerOptions {
  store: StoreSpec;
  prefetch: number;
  globalConcurrency: number;
  typeConcurrency: number;
}

export function tasklease(dialect: Dialect): SystemAdapter {
  const spec = storeSpec(dialect);
  let ready = false;
  let producer: Promise<{ store: Store; client: TaskLeaseClient }> | null = null;
  const open = async (): Promise<{ store: Store; client: TaskLeaseClient }> => {
    const { createClient, defineTask } = await library();
    const store = await openStore(spec);
    return { store, client: createClient({ store, tasks: [defineTask({ type: TASK_TYPE })] }) };
  };
  const need = async (): Promise<TaskLeaseClient> => {
    if (!ready) throw new Error(`tasklease-${dialect}: setup() first`);
    producer ??= open();
    return (await producer).client;
  };
  const release = async (): Promise<void> => {
    const opened = producer;
    producer = null;
    await (await opened)?.store.close();
  };

  return {
    name: `tasklease-${dialect}`,
    kind: 'tasklease',
    workerScript: fileURLToPath(new URL('../workers/tasklease.ts', import.meta.url)),
    // PostgreSQL wakes workers with NOTIFY, SQLite by their watching the -wal file; on MySQL workers in
    // other processes read the wake-up counters every wakeupPollMs (default).
    pollPeriodMs: dialect === 'mysql' ? DEFAULT_WAKEUP_POLL_MS : 0,
    supportsLimits: true,
    workScope:
      spec.dialect === 'postgres'
        ? { dialect: 'postgres', schema: spec.schema }
        : spec.dialect === 'mysql'
          ? { dialect: 'mysql', database: spec.database }
          : null,
    probe: () => probeStore(spec),
    async setup() {
      await createNamespace(spec);
      ready = true;
      producer = open();
      await (await producer).store.migrate();
    },
    async teardown() {
      ready = false;
      await release();
      await dropNamespace(spec);
    },
    release,
    async enqueueBulk(count, batchSize) {
      const instance = await need();
      for (const size of chunks(count, batchSize)) {
        await instance.submitMany(Array.from({ length: size }, () => ({ type: TASK_TYPE, payload: {} })));
      }
    },
    async enqueueOne(payload: LatencyPayload) {
      await (await need()).submit(TASK_TYPE, payload);
    },
    async remaining() {
      const { Scope } = await library();
      const counts = await (await need()).store.countByStatus({ scope: Scope.global(), taskType: TASK_TYPE });
      return counts.QUEUED + counts.RUNNING + counts.RETRY_WAIT + counts.CANCEL_REQUESTED;
    },
    workerOptions({ limits }: { concurrency: number; limits: Limits | null }): Record<string, unknown> {
      const options: TaskleaseWorkerOptions = {
        store: spec,
        prefetch: PREFETCH,
        globalConcurrency: limits?.global ?? HIGH_LIMIT,
        typeConcurrency: limits?.perType ?? HIGH_LIMIT,
      };
      return { ...options };
    },
    settings({ concurrency }) {
      const where = spec.dialect === 'postgres' ? `schema ${spec.schema}` : spec.dialect === 'mysql' ? `database ${spec.database}` : `file ${spec.path}`;
      return {
        store: `${dialect} (${where}), created fresh per workload and dropped after`,
        concurrency: `createWorker({ concurrency: ${concurrency}, prefetch: ${PREFETCH} }); other worker options at their defaults (claimBatchSize, pollIntervalMs, leaseMs, heartbeat, recovery)`,
        limits: `globalConcurrency = typeConcurrency = ${HIGH_LIMIT.toLocaleString('en-US')} (active, not binding); limits workload: 20 / 5`,
        enqueue: 'client.submitMany (bulk), client.submit (latency)',
        wake:
          dialect === 'postgres'
            ? 'LISTEN/NOTIFY, poll as fallback'
            : dialect === 'sqlite'
              ? "workers in other processes watch the database's -wal file (fs.watch), poll as fallback"
              : 'every submit bumps a counter row in its transaction; workers in other processes read the counters every wakeupPollMs (default 10 ms), poll as fallback',
        'finished tasks': 'kept as SUCCESS rows (tasklease design)',
      };
    },
    packages: () => (dialect === 'postgres' ? ['pg'] : dialect === 'mysql' ? ['mysql2'] : ['better-sqlite3']),
  };
}

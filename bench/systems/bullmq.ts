/**
 * BullMQ 6 on Redis: `addBulk` for bulk enqueue (one MULTI per call), a
 * Worker at `concurrency` in one process. Job options stay at BullMQ's
 * defaults (completed jobs are kept, as the SQL systems keep their rows).
 * Each run gets its own key prefix; teardown deletes exactly those keys.
 */
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { REDIS_URL, chunks, ownedName, redisOptions } from '../config.js';
import { TASK_TYPE, type LatencyPayload, type SystemAdapter } from '../types.js';

export interface BullmqOptions {
  connection: { host: string; port: number };
  prefix: string;
}

/** Deletes every key under `prefix:` (our own bench_* prefix only). */
async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  if (!prefix.startsWith('bench_')) throw new Error(`refusing to delete keys under ${prefix}`);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}

export function bullmq(): SystemAdapter {
  const prefix = ownedName('bullmq');
  const connection = redisOptions();
  let queue: Queue | null = null;
  const need = (): Queue => {
    if (!queue) throw new Error('bullmq: setup() first');
    return queue;
  };
  const withRedis = async <T>(fn: (redis: Redis) => Promise<T>): Promise<T> => {
    const redis = new Redis({ ...connection, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    try {
      await redis.connect();
      return await fn(redis);
    } finally {
      redis.disconnect();
    }
  };

  return {
    name: 'bullmq',
    kind: 'peer',
    workerScript: fileURLToPath(new URL('../workers/bullmq.ts', import.meta.url)),
    pollPeriodMs: 0,
    supportsLimits: false,
    workScope: null,
    async probe() {
      try {
        await withRedis((redis) => redis.ping());
        return null;
      } catch (error) {
        return `Redis not reachable at ${REDIS_URL}: ${(error as Error).message}`;
      }
    },
    async setup() {
      await withRedis((redis) => deletePrefix(redis, prefix));
      queue = new Queue(TASK_TYPE, { connection, prefix });
      await queue.waitUntilReady();
    },
    async teardown() {
      await queue?.close();
      queue = null;
      await withRedis((redis) => deletePrefix(redis, prefix));
    },
    async release() {
      // Redis: no statistics to flush; the queue's connection stays.
    },
    async enqueueBulk(count, batchSize) {
      const instance = need();
      for (const size of chunks(count, batchSize)) {
        await instance.addBulk(Array.from({ length: size }, () => ({ name: TASK_TYPE, data: {} })));
      }
    },
    async enqueueOne(payload: LatencyPayload) {
      await need().add(TASK_TYPE, payload);
    },
    async remaining() {
      const counts = await need().getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children');
      return Object.values(counts).reduce((sum, n) => sum + n, 0);
    },
    workerOptions(): Record<string, unknown> {
      const options: BullmqOptions = { connection, prefix };
      return { ...options };
    },
    settings({ concurrency }) {
      return {
        concurrency: `new Worker(..., { concurrency: ${concurrency} })`,
        enqueue: 'queue.addBulk (bulk), queue.add (latency)',
        wake: 'blocking BZPOPMIN on the marker key (BullMQ default)',
        'finished jobs': 'kept in the completed set (BullMQ default job options)',
      };
    },
    packages: () => ['bullmq', 'ioredis'],
  };
}

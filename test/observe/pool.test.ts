/**
 * The connection pool gauges (the seed's hikaricp_connections_* role) on a
 * real PostgreSQL and MariaDB pool: connections checked out by hand make the
 * pool exactly as busy as the test says, up to exhaustion with a caller waiting.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observe/metrics.js';
import type { MysqlStore } from '../../src/store/mysql/store.js';
import type { PoolStats } from '../../src/store/pool-stats.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { onMysql } from '../helpers/mysql.js';
import { perTestStore } from '../helpers/per-test.js';
import { onPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

/** Takes one connection from the store's pool; resolves to its release once lent (stays pending while the pool is exhausted). */
type Borrow = (store: Store) => Promise<() => void>;

const borrowPg: Borrow = async (store) => {
  const client = await (store as PostgresStore).pool.connect();
  return () => client.release();
};
const borrowMysql: Borrow = async (store) => {
  const conn = await (store as MysqlStore).db.pool.getConnection();
  return () => conn.release();
};

async function scrapedPool(registry: Registry, dialect: string): Promise<PoolStats> {
  const text = await registry.metrics();
  const read = (field: keyof PoolStats): number => {
    const match = new RegExp(`^async_task_db_connections_${field}\\{dialect="${dialect}"\\} (\\S+)$`, 'm').exec(text);
    if (!match) throw new Error(`no async_task_db_connections_${field} series for ${dialect} in:\n${text}`);
    return Number(match[1]);
  };
  return { active: read('active'), idle: read('idle'), max: read('max'), pending: read('pending') };
}

function runPoolSuite(borrow: Borrow) {
  return (factory: StoreFactory): void => {
    describe(`pool gauges on ${factory.dialect}`, () => {
      const env = perTestStore(factory); // poolSize 4
      it('follow the pool from idle to exhausted with a caller waiting, and back', async () => {
        const store = env.store as Store & { poolStats(): PoolStats | null };
        const registry = new Registry();
        createMetrics({ registry }).attachStore(store);
        const held = await Promise.all([borrow(store), borrow(store), borrow(store)]);
        expect(store.poolStats()).toEqual({ active: 3, idle: 0, max: 4, pending: 0 });
        for (const release of held.splice(0, 2)) release();
        expect(store.poolStats()).toEqual({ active: 1, idle: 2, max: 4, pending: 0 });

        held.push(...(await Promise.all([borrow(store), borrow(store), borrow(store)])));
        const waiting = borrow(store); // the fifth caller waits
        expect(store.poolStats()).toEqual({ active: 4, idle: 0, max: 4, pending: 1 });
        // The scrape answers although its dead-letter count cannot get a connection (the gauge keeps its last value).
        const exhausted = await scrapedPool(registry, store.dialect);
        expect(exhausted).toMatchObject({ active: 4, idle: 0, max: 4 });
        expect(exhausted.pending).toBeGreaterThanOrEqual(1);
        // The seed's DatabaseConnectionPoolExhausted ratio, active / max, is at 1.
        expect(exhausted.active / exhausted.max).toBe(1);

        held.shift()!();
        held.push(await waiting);
        for (const release of held.splice(0)) release();
        // The scrape's dead-letter count, given up on but still queued, runs now and hands its connection back.
        await waitFor(() => store.poolStats()?.active === 0, 'every connection back in the pool');
        expect(store.poolStats()).toMatchObject({ active: 0, max: 4, pending: 0 });
      });
    });
  };
}

await onPostgres('test/observe/pool.test.ts', 'pool gauges', runPoolSuite(borrowPg));
await onMysql('test/observe/pool.test.ts', 'pool gauges', runPoolSuite(borrowMysql));

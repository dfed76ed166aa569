/**
 * Read-only connection pool figures for the metrics (the seed's
 * hikaricp_connections_* role): how many connections are in use, idle, the
 * pool's limit, and callers waiting for one. Type-only driver imports: this
 * module loads no driver.
 */
import type pg from 'pg';
import type { Pool as MysqlPromisePool } from 'mysql2/promise';

export interface PoolStats {
  /** Connections lent out (running a statement or held by a transaction). */
  active: number;
  /** Connections open and free. */
  idle: number;
  /** The most connections the pool opens. */
  max: number;
  /** Callers waiting for a connection. */
  pending: number;
}

/** A store that can report its pool (PostgreSQL, MySQL); SQLite has no pool. */
export interface PoolStatsSource {
  poolStats(): PoolStats | null;
}

export function hasPoolStats(store: object): store is PoolStatsSource {
  return typeof (store as Partial<PoolStatsSource>).poolStats === 'function';
}

export function pgPoolStats(pool: pg.Pool): PoolStats {
  return {
    active: pool.totalCount - pool.idleCount, idle: pool.idleCount,
    max: pool.options.max ?? 10, pending: pool.waitingCount,
  };
}

/** mysql2 exposes no pool counters: these are its core pool's internal queues, read defensively (null if a release renames them). */
interface MysqlCorePoolInternals {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
  config?: { connectionLimit?: number };
}

export function mysqlPoolStats(pool: MysqlPromisePool): PoolStats | null {
  const core = pool.pool as unknown as MysqlCorePoolInternals;
  const all = core._allConnections?.length;
  const free = core._freeConnections?.length;
  const queued = core._connectionQueue?.length;
  const max = core.config?.connectionLimit;
  if (typeof all !== 'number' || typeof free !== 'number' || typeof queued !== 'number' || typeof max !== 'number') return null;
  return { active: all - free, idle: free, max, pending: queued };
}

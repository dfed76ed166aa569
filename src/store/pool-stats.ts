/**
 * Read-only connection pool figures for the metrics (the seed's
 * hikaricp_connections_* role): how many connections are in use, idle, the
 * pool's limit, and callers waiting for one. No driver types here: the root
 * entry reaches this module, and a consumer may have installed no driver
 * (each dialect reads its own pool in its connection.ts).
 */

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

/**
 * Bulk operations in the store (client/bulk.ts runs them): one row per
 * operation in system_async_task_bulk — its action and filter as given, who
 * started it and for which owner scope, the count its dry run saw, its
 * progress (the id cursor below which every task was handled, and the
 * counts), and the lease of the process running it. Every progress write is
 * fenced by that lease (DESIGN §3): a process that lost it — another resumed
 * the operation after its lease expired — writes nothing more. The statements
 * are the same on every dialect: they run through SideSql. Times are the
 * database clock.
 */
import type { Row } from './rows.js';
import { guardSideStore } from './base.js';
import { sideSqlOf, type SideSql } from './side-sql.js';
import type { Actor, Store } from './types.js';

export const BULK_TABLE = 'system_async_task_bulk';

export type BulkStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export interface BulkRow {
  id: string;
  action: string;
  filterJson: string;
  paramsJson: string | null;
  status: BulkStatus;
  /** The owner the operation is confined to (a user's), null: every owner. */
  scopeOwner: string | null;
  actor: Actor;
  matched: number;
  processed: number;
  changed: number;
  /** Ids run newest first: the filter's tasks at or above this id are handled, the next batch lists those below it. */
  cursorId: string | null;
  /** Ids below this one are out of the window (createdAfter). */
  floorId: string | null;
  cancelRequested: boolean;
  error: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export interface NewBulkRow {
  id: string;
  action: string;
  filterJson: string;
  paramsJson: string | null;
  scopeOwner: string | null;
  actor: Actor;
  matched: number;
  cursorId: string | null;
  floorId: string | null;
  /** The creating process takes the lease at once (null: the first runner does). */
  leaseOwner: string | null;
  leaseMs: number;
}

export interface BulkProgress {
  id: string;
  leaseOwner: string;
  leaseMs: number;
  cursorId: string | null;
  /** Added to the counts. */
  processed: number;
  changed: number;
}

const num = (value: unknown): number => Number(value ?? 0);

export class BulkStore {
  private readonly table: string;

  constructor(
    private readonly store: Store,
    private readonly sql: SideSql,
  ) {
    this.table = sql.table(BULK_TABLE);
  }

  async create(row: NewBulkRow): Promise<void> {
    const now = await this.store.now();
    const t = (date: Date) => this.sql.time(date);
    await this.sql.exec(
      'starting a bulk operation',
      `INSERT INTO ${this.table} (id, action, filter_json, params_json, status, scope_owner, actor, actor_name, matched, processed, changed,
         cursor_id, floor_id, cancel_requested, lease_owner, lease_expires_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'RUNNING', ?, ?, ?, ?, 0, 0, ?, ?, 0, ?, ?, ?, ?)`,
      [
        row.id,
        row.action,
        row.filterJson,
        row.paramsJson,
        row.scopeOwner,
        row.actor.id,
        row.actor.name ?? null,
        row.matched,
        row.cursorId,
        row.floorId,
        row.leaseOwner,
        row.leaseOwner === null ? null : t(new Date(now.getTime() + row.leaseMs)),
        t(now),
        t(now),
      ],
    );
  }

  /** One operation; with an owner, only one of that owner's (another's answers null, as a missing one). */
  async get(id: string, scopeOwner: string | null): Promise<BulkRow | null> {
    const rows = await this.sql.rows(
      'reading a bulk operation',
      `SELECT * FROM ${this.table} WHERE id = ?${scopeOwner === null ? '' : ' AND scope_owner = ?'}`,
      scopeOwner === null ? [id] : [id, scopeOwner],
    );
    return rows[0] ? this.fromRow(rows[0]) : null;
  }

  /** Newest first. */
  async list(params: { scopeOwner: string | null; limit: number }): Promise<BulkRow[]> {
    const where = params.scopeOwner === null ? '' : 'WHERE scope_owner = ?';
    const rows = await this.sql.rows('listing bulk operations', `SELECT * FROM ${this.table} ${where} ORDER BY id DESC LIMIT ?`, [
      ...(params.scopeOwner === null ? [] : [params.scopeOwner]),
      params.limit,
    ]);
    return rows.map((row) => this.fromRow(row));
  }

  /** RUNNING operations no live process holds (never taken, or the lease expired): the ones to resume. */
  async abandoned(limit: number): Promise<string[]> {
    const now = this.sql.time(await this.store.now());
    const rows = await this.sql.rows(
      'finding abandoned bulk operations',
      `SELECT id FROM ${this.table} WHERE status = 'RUNNING' AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY id LIMIT ?`,
      [now, limit],
    );
    return rows.map((row) => String(row.id));
  }

  /** RUNNING operations a live process holds now (its lease unexpired): what a move waits for, as for task leases. */
  async held(): Promise<number> {
    const now = this.sql.time(await this.store.now());
    const rows = await this.sql.rows(
      'counting running bulk operations',
      `SELECT COUNT(*) AS n FROM ${this.table} WHERE status = 'RUNNING' AND lease_expires_at >= ?`,
      [now],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Takes (or renews) the lease of a RUNNING operation: false when another process holds a live one, or it ended. */
  async acquire(params: { id: string; leaseOwner: string; leaseMs: number }): Promise<boolean> {
    const now = await this.store.now();
    const changed = await this.sql.exec(
      'taking a bulk operation',
      `UPDATE ${this.table} SET lease_owner = ?, lease_expires_at = ?, updated_at = ?
       WHERE id = ? AND status = 'RUNNING' AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires_at IS NULL OR lease_expires_at < ?)`,
      [params.leaseOwner, this.sql.time(new Date(now.getTime() + params.leaseMs)), this.sql.time(now), params.id, params.leaseOwner, this.sql.time(now)],
    );
    return changed === 1;
  }

  /** A batch's progress, fenced by the lease (renewed with it): false when the lease is gone — stop. */
  async saveProgress(progress: BulkProgress): Promise<boolean> {
    const now = await this.store.now();
    return this.sql.guarded('saving a bulk operation', [
      {
        sql: `UPDATE ${this.table} SET cursor_id = ?, processed = processed + ?, changed = changed + ?, lease_expires_at = ?, updated_at = ?
              WHERE id = ? AND status = 'RUNNING' AND lease_owner = ?`,
        values: [
          progress.cursorId,
          progress.processed,
          progress.changed,
          this.sql.time(new Date(now.getTime() + progress.leaseMs)),
          this.sql.time(now),
          progress.id,
          progress.leaseOwner,
        ],
        expect: 'one',
      },
    ]);
  }

  /** Ends the operation (fenced by the lease); the lease is let go. */
  async finish(params: { id: string; leaseOwner: string; status: Exclude<BulkStatus, 'RUNNING'>; error: string | null }): Promise<boolean> {
    const now = this.sql.time(await this.store.now());
    const changed = await this.sql.exec(
      'ending a bulk operation',
      `UPDATE ${this.table} SET status = ?, error = ?, finished_at = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND status = 'RUNNING' AND lease_owner = ?`,
      [params.status, params.error, now, now, params.id, params.leaseOwner],
    );
    return changed === 1;
  }

  /** Lets the lease go at once (a process stopping): another process may resume the operation without waiting. */
  async release(params: { id: string; leaseOwner: string }): Promise<void> {
    await this.sql.exec(
      'handing back a bulk operation',
      `UPDATE ${this.table} SET lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND status = 'RUNNING' AND lease_owner = ?`,
      [params.id, params.leaseOwner],
    );
  }

  /** Asks the running operation to stop after its current batch: false when it is not running (or not in scope). */
  async requestCancel(id: string, scopeOwner: string | null): Promise<boolean> {
    const changed = await this.sql.exec(
      'cancelling a bulk operation',
      `UPDATE ${this.table} SET cancel_requested = 1 WHERE id = ? AND status = 'RUNNING'${scopeOwner === null ? '' : ' AND scope_owner = ?'}`,
      scopeOwner === null ? [id] : [id, scopeOwner],
    );
    return changed === 1;
  }

  /** Ended operations that finished before the cut-off (cleanup). */
  async purge(finishedBefore: Date): Promise<number> {
    return this.sql.exec('purging bulk operations', `DELETE FROM ${this.table} WHERE status <> 'RUNNING' AND finished_at < ?`, [this.sql.time(finishedBefore)]);
  }

  private fromRow(row: Row): BulkRow {
    const time = (value: unknown): Date | null => (value === null || value === undefined ? null : this.sql.readTime(value));
    return {
      id: String(row.id),
      action: String(row.action),
      filterJson: String(row.filter_json),
      paramsJson: row.params_json === null || row.params_json === undefined ? null : String(row.params_json),
      status: String(row.status) as BulkStatus,
      scopeOwner: row.scope_owner === null || row.scope_owner === undefined ? null : String(row.scope_owner),
      actor: { id: String(row.actor), name: row.actor_name === null || row.actor_name === undefined ? null : String(row.actor_name) },
      matched: num(row.matched),
      processed: num(row.processed),
      changed: num(row.changed),
      cursorId: row.cursor_id === null || row.cursor_id === undefined ? null : String(row.cursor_id),
      floorId: row.floor_id === null || row.floor_id === undefined ? null : String(row.floor_id),
      cancelRequested: num(row.cancel_requested) !== 0,
      error: row.error === null || row.error === undefined ? null : String(row.error),
      leaseOwner: row.lease_owner === null || row.lease_owner === undefined ? null : String(row.lease_owner),
      leaseExpiresAt: time(row.lease_expires_at),
      createdAt: time(row.created_at)!,
      updatedAt: time(row.updated_at)!,
      finishedAt: time(row.finished_at),
    };
  }
}

export async function bulkStoreOf(store: Store): Promise<BulkStore> {
  return guardSideStore(store, new BulkStore(store, await sideSqlOf(store)));
}

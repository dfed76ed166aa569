/**
 * Fenced writes about held leases on SQLite: heartbeat, progress, hand-back, steps.
 * Each WHERE carries lease owner, attempt, token and a leased status (renewal and
 * progress: an unexpired lease too, rules/leases.ts); the rows touched decide
 * the answer (rules/: renewalAnswer, releaseAssignments).
 */
import type { Lease, TaskProgress } from '../../core/task.js';
import { progressValues } from '../rows.js';
import { CURRENT_CYCLE, fenceSql, nextStepSeqSql, leaseKey, liveLeaseSql, releaseAssignments, renewalAnswer } from '../rules/index.js';
import type { RenewResult } from '../types.js';
import { statement, type Db } from './connection.js';
import { closeAttempt } from './finish.js';

export function renewLeases(db: Db, leases: readonly Lease[], leaseUntil: string, now: string): RenewResult {
  // One statement for every lease: the leases travel as one JSON array.
  const rows = statement(
    db,
    `UPDATE system_async_task AS t SET lease_until = @leaseUntil, update_time = @now
     FROM (SELECT json_extract(value, '$[0]') AS lease_id, json_extract(value, '$[1]') AS lease_worker,
             json_extract(value, '$[2]') AS lease_attempt, json_extract(value, '$[3]') AS lease_token FROM json_each(@leases)) AS l
     WHERE t.id = l.lease_id AND ${fenceSql('l.lease_worker', 'l.lease_attempt', 'l.lease_token', 't.')}
       AND ${liveLeaseSql('@now', 't.')}
     RETURNING id, lease_owner AS owner, attempt_count AS attempt, lease_token AS token, status`,
  ).all({ leaseUntil, now, leases: JSON.stringify(leases.map((lease) => [lease.taskId, lease.workerId, lease.attempt, lease.token])) }) as {
    id: string;
    owner: string;
    attempt: number;
    token: string;
    status: string;
  }[];
  return renewalAnswer(leases, new Map(rows.map((row) => [leaseKey(row.id, row.owner, row.attempt, row.token), row.status])));
}

/**
 * Runs one write with synchronous = FULL (ctx.fence: the store runs NORMAL, whose commits in WAL mode survive a
 * crash of the process but may be rolled back by a power loss or an OS crash). FULL syncs the WAL at this commit,
 * and with it every frame before it — the claim this write confirms, whichever process wrote it. The setting is
 * the connection's own, and better-sqlite3 runs `work` synchronously: no other statement of this store meets it.
 */
export function durably<T>(db: Db, work: () => T): T {
  db.pragma('synchronous = FULL');
  try {
    return work();
  } finally {
    db.pragma('synchronous = NORMAL');
  }
}

export function saveProgress(db: Db, lease: Lease, progress: TaskProgress, now: string): boolean {
  const info = statement(
    db,
    `UPDATE system_async_task SET progress_total = ?, progress_processed = ?, progress_succeeded = ?, progress_failed = ?,
       progress_skipped = ?, progress_message = ?, update_time = ?
     WHERE id = ? AND ${fenceSql('?', '?', '?')} AND ${liveLeaseSql('?')}`,
  ).run(...progressValues(progress), now, lease.taskId, lease.workerId, lease.attempt, lease.token, now);
  return info.changes === 1;
}

/** Never-started prefetched tasks go back uncharged, their attempt recorded as RELEASED; inside the caller's transaction. */
export function releaseTasks(db: Db, leases: readonly Lease[], now: string): number {
  const release = statement(
    db,
    `UPDATE system_async_task SET ${releaseAssignments('@now').join(', ')}
     WHERE id = @id AND ${fenceSql('@worker', '@attempt', '@token')}`,
  );
  let released = 0;
  for (const lease of leases) {
    if (release.run({ now, id: lease.taskId, worker: lease.workerId, attempt: lease.attempt, token: lease.token }).changes !== 1) continue;
    closeAttempt(db, lease.taskId, lease.attempt, 'RELEASED', null, now);
    released += 1;
  }
  return released;
}

/** A completed step (rules/steps.ts), fenced by a live lease; inside the caller's BEGIN IMMEDIATE (the write lock keeps the fence true until the insert). */
export function recordStep(db: Db, lease: Lease, name: string, resultJson: string | null, now: string): boolean {
  const held = statement(db, `SELECT attempt_count FROM system_async_task WHERE id = ? AND ${fenceSql('?', '?', '?')} AND ${liveLeaseSql('?')}`).get(
    lease.taskId,
    lease.workerId,
    lease.attempt,
    lease.token,
    now,
  );
  if (!held) return false;
  statement(
    db,
    `INSERT INTO system_async_task_step (task_id, cycle, name, seq, result_json, attempt, worker_id, recorded_at)
     VALUES (?, ${CURRENT_CYCLE}, ?, ${nextStepSeqSql('system_async_task_step', '?')}, ?, ?, ?, ?)
     ON CONFLICT (task_id, cycle, name) DO NOTHING`,
  ).run(lease.taskId, name, lease.taskId, resultJson, lease.attempt, lease.workerId, now);
  return true;
}

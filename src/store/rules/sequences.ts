/**
 * Sequences: tasks submitted with one `sequenceKey` run one at a time, in
 * submit order, across every worker — written once for every dialect.
 *
 * Each key has a row (SEQUENCE_TABLE) that numbers its tasks (next_seq) and
 * serializes everything that decides who runs next: a submit, and the end of
 * the task that holds the key. A key is held by at most one task — its head:
 * a task of the key that waits for nothing (pending_parents 0) and has not
 * ended; or, under the key's BLOCK policy (the default), its dead-lettered
 * head (FAILED, after the last skip) until it is replayed or skipped. Every
 * other task of the key waits: BLOCKED (or PAUSED) with pending_parents 1,
 * out of the claim index, counted by no limit — so a key with a million
 * tasks waiting costs the claim nothing and cannot crowd other keys out.
 *
 * A submit inserts its task waiting, then releases the key. The release
 * (under the key row's lock): when nothing holds the key, the first waiting
 * task (lowest seq) stops waiting — a BLOCKED one becomes QUEUED, queued
 * behind what waits already (available_at = now at the latest: a fair turn
 * across keys, since a released task does not jump ahead of other keys'
 * heads); a PAUSED one stays PAUSED but holds the key. The end of a head
 * releases its key in the transaction that ends it (the same hooks that
 * settle a flow's children). A waiting task cancelled or paused by an
 * operator releases nothing (something ahead of it holds the key), so the
 * locks are always taken task → key → next waiting task: no cycle.
 *
 * A retrying head (RETRY_WAIT) still holds its key: only that key waits.
 * Under SKIP a dead-lettered head lets the next task run; under BLOCK it
 * holds until an operator replays it (it runs again, as the head) or skips
 * it (skipped_through = its seq: it stays a dead letter, and no longer holds).
 */
import { TERMINAL_STATUSES, type TaskStatus } from '../../core/status.js';
import type { NewTask } from '../../core/task.js';
import { literal, STATUS_SQL, statusList } from './sql.js';

export const SEQUENCE_TABLE = 'system_async_task_sequence';

/** What a key's dead-lettered head does to the tasks behind it. */
export type SequenceOnDeadLetter = 'BLOCK' | 'SKIP';
export const SEQUENCE_ON_DEAD_LETTER: readonly SequenceOnDeadLetter[] = ['BLOCK', 'SKIP'];

/** Statuses a task can wait in (pending_parents > 0): BLOCKED, or PAUSED by an operator while it waited. */
const WAITING_STATUSES: readonly TaskStatus[] = ['BLOCKED', 'PAUSED'];
const WAITING_SQL = statusList(WAITING_STATUSES);
const ENDED_SQL = statusList(TERMINAL_STATUSES);

/**
 * SQL: whether task row `t` holds its key, given its key row `k` (joined on
 * the key): not waiting and not ended, or its dead-lettered head under BLOCK.
 */
export function holdsKeySql(t: string, k: string): string {
  return `(COALESCE(${t}.pending_parents, 0) = 0 AND (${t}.status NOT IN ${ENDED_SQL}
    OR (${t}.status = ${STATUS_SQL.FAILED} AND ${k}.on_dead_letter = ${literal('BLOCK')} AND ${t}.sequence_seq > COALESCE(${k}.skipped_through, 0))))`;
}

/** SQL: whether task row `t` waits for its turn. */
export function waitsSql(t: string): string {
  return `(${t}.pending_parents > 0 AND ${t}.status IN ${WAITING_SQL})`;
}

/** The status of a waiting task once released, over a status column: BLOCKED runs, PAUSED stays paused (and holds the key). */
export function releasedStatusSql(status: string): string {
  return `CASE WHEN ${status} = ${STATUS_SQL.BLOCKED} THEN ${STATUS_SQL.QUEUED} ELSE ${status} END`;
}

/** How a key stands, as its listing shows it. */
export interface SequenceSummary {
  sequenceKey: string;
  onDeadLetter: SequenceOnDeadLetter;
  /** The task holding the key, if any (its id, type, status and last error code). */
  head: { id: string; taskType: string; status: TaskStatus; lastErrorCode: string | null } | null;
  /** Tasks waiting for their turn. */
  waiting: number;
  /** The key waits for an operator: its head is dead-lettered (BLOCK) or paused. */
  blocked: boolean;
  updatedAt: Date;
}

/** Whether a key with this head needs an operator to go on. */
export function sequenceBlocked(head: { status: TaskStatus } | null, waiting: number): boolean {
  return waiting > 0 && head !== null && (head.status === 'FAILED' || head.status === 'PAUSED');
}

/** The sequence index's predicate (the migrations'): a key's tasks that may still hold it or wait. */
export function sequenceLiveSql(t: string): string {
  return `${t}.status NOT IN ('SUCCESS', 'PARTIAL_SUCCESS', 'CANCELLED')`;
}

/** A key's holder, if any: one parameter, the key (`?` or `$1`…); through the sequence index. */
export function sequenceHolderSql(tables: { task: string; sequence: string }, key: string): string {
  return `SELECT t.id FROM ${tables.task} t JOIN ${tables.sequence} k ON k.sequence_key = t.sequence_key
    WHERE t.sequence_key = ${key} AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} LIMIT 1`;
}

/** A key's first waiting task (lowest seq): one parameter, the key. */
export function sequenceNextSql(task: string, key: string): string {
  return `SELECT t.id FROM ${task} t WHERE t.sequence_key = ${key} AND ${sequenceLiveSql('t')} AND ${waitsSql('t')}
    ORDER BY t.sequence_seq LIMIT 1`;
}

/** The assignments that release a waiting task (its status by releasedStatusSql, assigned first by the caller). */
export function sequenceReleaseAssignments(now: string, greatest: string): string[] {
  return ['pending_parents = 0', `available_at = ${greatest}(available_at, ${now})`, `update_time = ${now}`];
}

/** A submit's sequenced tasks by key: the keys in lock order, how many numbers each takes, the policy each sets. */
export interface NumberingPlan {
  keys: string[];
  counts: number[];
  policies: (SequenceOnDeadLetter | null)[];
  /** The tasks, each sequenced one numbered (from its key's first number, in submit order) and waiting. */
  assign(firstOf: (key: string, count: number) => number): NewTask[];
}

/** Every sequenced task is inserted waiting; the release right after decides whether it runs (one path for all). */
export function numberingPlan(tasks: readonly NewTask[]): NumberingPlan {
  const byKey = new Map<string, NewTask[]>();
  for (const task of tasks) if (task.sequenceKey) byKey.set(task.sequenceKey, [...(byKey.get(task.sequenceKey) ?? []), task]);
  const keys = [...byKey.keys()].sort();
  return {
    keys,
    counts: keys.map((key) => byKey.get(key)!.length),
    policies: keys.map((key) => byKey.get(key)!.findLast((t) => t.sequenceOnDeadLetter)?.sequenceOnDeadLetter ?? null),
    assign(firstOf) {
      const next = new Map(keys.map((key) => [key, firstOf(key, byKey.get(key)!.length)]));
      return tasks.map((task) => {
        if (!task.sequenceKey) return task;
        const seq = next.get(task.sequenceKey)!;
        next.set(task.sequenceKey, seq + 1);
        return { ...task, sequenceSeq: seq, pendingParents: 1 };
      });
    },
  };
}

/** The keys with tasks waiting, read from the sequence index (not the key table, which keeps every key ever used). */
export function waitingKeysSql(task: string): string {
  return `SELECT DISTINCT t.sequence_key FROM ${task} t WHERE t.sequence_key IS NOT NULL AND ${sequenceLiveSql('t')} AND ${waitsSql('t')}`;
}

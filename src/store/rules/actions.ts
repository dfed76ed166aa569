/**
 * The operator-action history (system_async_task_action), written once: which
 * changes leave a row, and the row each one leaves. A row is written in the
 * transaction of the change it records, only for a task that change really
 * moved (one row per task, however often its id was asked for), and never for
 * a worker's transition: claims and outcomes are on the attempts already, so
 * the drain writes nothing here and its cost per task does not change.
 */
import type { TaskStatus } from '../../core/status.js';
import type { ActionRecordInput, Actor } from '../types.js';
import { STATUS_SQL } from './sql.js';

/** The columns of an action row: actionValues in this order, then the dialect's clock (acted_at). */
export const ACTION_COLUMNS = '(task_id, action, from_status, to_status, actor, actor_name, detail, acted_at)';

/** Longest actor, actor name and detail any store keeps (the client refuses longer ones). */
export const ACTION_TEXT_LIMIT = 255;

/** One action row's values in ACTION_COLUMNS order, but for acted_at: the dialect adds its clock. */
export function actionValues(
  record: ActionRecordInput,
  change: { taskId: string; from: TaskStatus | null; to: TaskStatus | null; detail?: string | null },
): unknown[] {
  return [change.taskId, record.action, change.from, change.to, record.actor.id, record.actor.name ?? null, change.detail ?? record.detail ?? null];
}

/**
 * The rows a status change leaves: one per task it changed (first mention only),
 * with the status it had before. `changed` holds what the store locked and moved.
 */
export function statusChangeActions(record: ActionRecordInput | undefined, changed: readonly { id: string; from: TaskStatus }[], to: TaskStatus): unknown[][] {
  if (!record) return [];
  const seen = new Set<string>();
  return changed.filter(({ id }) => !seen.has(id) && seen.add(id)).map(({ id, from }) => actionValues(record, { taskId: id, from, to }));
}

/** What a dead letter's replay does to its task (FAILED → QUEUED) and what its archive does (nothing); the detail is the letter's id. */
export const DEAD_LETTER_ACTIONS: { readonly [K in 'REPLAY' | 'ARCHIVE']: { from: TaskStatus | null; to: TaskStatus | null } } = {
  REPLAY: { from: 'FAILED', to: 'QUEUED' },
  ARCHIVE: { from: null, to: null },
};

/** A dead letter's replay or archive as an action row. */
export function deadLetterAction(kind: 'REPLAY' | 'ARCHIVE', actor: Actor, taskId: string, deadLetterId: string): unknown[] {
  return actionValues({ action: kind, actor }, { taskId, ...DEAD_LETTER_ACTIONS[kind], detail: deadLetterId });
}

/** The same statuses as SQL text, for a dialect that writes the row inside one statement. */
export function deadLetterActionStatusSql(kind: 'REPLAY' | 'ARCHIVE'): { from: string; to: string } {
  const { from, to } = DEAD_LETTER_ACTIONS[kind];
  return { from: from === null ? 'NULL' : STATUS_SQL[from], to: to === null ? 'NULL' : STATUS_SQL[to] };
}

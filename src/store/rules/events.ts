/**
 * Event subscriptions (fan-out by event, client/events.ts), written once for
 * the three dialects: the table, its columns, the record a row becomes, and
 * the read a publish makes inside its transaction. A dialect supplies its
 * placeholders, its clock and its lock clause.
 *
 * A publish reads the event's subscriptions and inserts one task per
 * subscription in one transaction, the read locking the rows it returns
 * (PostgreSQL FOR SHARE, MySQL LOCK IN SHARE MODE; SQLite's write lock
 * covers all): an unsubscribe waits for a publish that saw its row to
 * commit, and a subscription committed before the publish's read is in it
 * — each concurrent change is wholly in or wholly out of a publish.
 */
import type { Subscription, SubscriptionInput } from '../types.js';

export const SUBSCRIPTION_TABLE = 'system_async_task_subscription';

export const SUBSCRIPTION_COLUMNS = 'event_name, task_type, priority, max_attempts, created_at, updated_at';

/** Insert values in SUBSCRIPTION_COLUMNS order, before the two times (4 values). */
export function subscriptionValues(s: SubscriptionInput): unknown[] {
  return [s.event, s.taskType, s.priority, s.maxAttempts];
}

/** SET of an upsert's update: the incoming options; created_at stays. */
export function subscriptionUpdate(incoming: (column: string) => string, now: string): string {
  return `priority = ${incoming('priority')}, max_attempts = ${incoming('max_attempts')}, updated_at = ${now}`;
}

/** The subscriptions a listing returns, filtered by event and / or type (params: event, event, type, type), in key order. */
export function listSubscriptionsSql(table: string, param: (index: number) => string, lock = ''): string {
  return `SELECT ${SUBSCRIPTION_COLUMNS} FROM ${table}
    WHERE (${param(1)} IS NULL OR event_name = ${param(2)}) AND (${param(3)} IS NULL OR task_type = ${param(4)})
    ORDER BY event_name, task_type${lock ? ` ${lock}` : ''}`;
}

/** A publish's read of its event's subscriptions (param: the event), locking them until it commits. */
export function publishSubscriptionsSql(table: string, param: string, lock: string): string {
  return `SELECT ${SUBSCRIPTION_COLUMNS} FROM ${table} WHERE event_name = ${param} ORDER BY task_type ${lock}`;
}

export function subscriptionFromRow(row: Record<string, unknown>, time: (value: unknown) => Date): Subscription {
  const optional = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
  return {
    event: String(row.event_name),
    taskType: String(row.task_type),
    priority: optional(row.priority),
    maxAttempts: optional(row.max_attempts),
    createdAt: time(row.created_at),
    updatedAt: time(row.updated_at),
  };
}

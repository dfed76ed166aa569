/**
 * Event subscriptions and publishes on SQLite (rules/events.ts). A publish
 * runs under BEGIN IMMEDIATE, SQLite's write lock: the read of the
 * subscriptions and the insert of the tasks see one state, and no
 * subscription changes between them.
 */
import type { NewTask } from '../../core/task.js';
import * as rules from '../rules/events.js';
import type { PublishEventResult, Subscription, SubscriptionInput } from '../types.js';
import { statement, type Db } from './connection.js';
import { fromSqliteTime } from './encode.js';
import { insertTasks } from './insert.js';

const fromRow = (row: unknown): Subscription => rules.subscriptionFromRow(row as Record<string, unknown>, fromSqliteTime);

export function saveSubscription(db: Db, subscription: SubscriptionInput, now: string): Subscription {
  const row = statement(
    db,
    `INSERT INTO ${rules.SUBSCRIPTION_TABLE} (${rules.SUBSCRIPTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (event_name, task_type) DO UPDATE SET ${rules.subscriptionUpdate((column) => `excluded.${column}`, 'excluded.updated_at')}
     RETURNING ${rules.SUBSCRIPTION_COLUMNS}`,
  ).get(...rules.subscriptionValues(subscription), now, now);
  return fromRow(row);
}

export function deleteSubscription(db: Db, event: string, taskType: string): boolean {
  return statement(db, `DELETE FROM ${rules.SUBSCRIPTION_TABLE} WHERE event_name = ? AND task_type = ?`).run(event, taskType).changes === 1;
}

export function listSubscriptions(db: Db, event: string | null, taskType: string | null): Subscription[] {
  return statement(
    db,
    rules.listSubscriptionsSql(rules.SUBSCRIPTION_TABLE, () => '?'),
  )
    .all(event, event, taskType, taskType)
    .map(fromRow);
}

/** Inside the caller's write transaction. */
export function publishEvent(db: Db, event: string, build: (subscriptions: readonly Subscription[]) => readonly NewTask[], nowMs: number): PublishEventResult {
  const subscriptions = statement(db, rules.publishSubscriptionsSql(rules.SUBSCRIPTION_TABLE, '?', ''))
    .all(event)
    .map(fromRow);
  const tasks = build(subscriptions);
  return { subscriptions, results: tasks.length > 0 ? insertTasks(db, tasks, nowMs) : [] };
}

/**
 * Event subscriptions and publishes on MySQL/MariaDB (rules/events.ts). A
 * publish is one transaction (its own, or the caller's): the read of the
 * subscriptions takes shared locks (LOCK IN SHARE MODE, on both servers), so
 * an unsubscribe of a row it read waits for its commit; the insert is
 * insert.ts's.
 */
import type { NewTask } from '../../core/task.js';
import * as rules from '../rules/events.js';
import type { PublishEventResult, Subscription, SubscriptionInput } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { decode } from './encode.js';
import { insertTasks } from './insert.js';

const NOW = 'NOW(3)';
const fromRow = (row: Record<string, unknown>): Subscription => rules.subscriptionFromRow(row, decode.time);

export async function saveSubscription(db: MysqlDatabase, conn: Conn, subscription: SubscriptionInput): Promise<Subscription> {
  await db.exec(
    conn,
    `INSERT INTO ${rules.SUBSCRIPTION_TABLE} (${rules.SUBSCRIPTION_COLUMNS}) VALUES (?, ?, ?, ?, ${NOW}, ${NOW})
     ON DUPLICATE KEY UPDATE ${rules.subscriptionUpdate((column) => `VALUES(${column})`, NOW)}`,
    rules.subscriptionValues(subscription),
  );
  return (await listSubscriptions(db, conn, subscription.event, subscription.taskType))[0]!;
}

export async function deleteSubscription(db: MysqlDatabase, conn: Conn, event: string, taskType: string): Promise<boolean> {
  const result = await db.exec(conn, `DELETE FROM ${rules.SUBSCRIPTION_TABLE} WHERE event_name = ? AND task_type = ?`, [event, taskType]);
  return result.affectedRows === 1;
}

export async function listSubscriptions(db: MysqlDatabase, conn: Conn, event: string | null, taskType: string | null): Promise<Subscription[]> {
  const rows = await db.rows(
    conn,
    rules.listSubscriptionsSql(rules.SUBSCRIPTION_TABLE, () => '?'),
    [event, event, taskType, taskType],
  );
  return rows.map(fromRow);
}

/** Inside a transaction on `conn`. */
export async function publishEvent(
  db: MysqlDatabase,
  conn: Conn,
  event: string,
  build: (subscriptions: readonly Subscription[]) => readonly NewTask[],
): Promise<PublishEventResult> {
  const rows = await db.rows(conn, rules.publishSubscriptionsSql(rules.SUBSCRIPTION_TABLE, '?', 'LOCK IN SHARE MODE'), [event]);
  const subscriptions = rows.map(fromRow);
  const tasks = build(subscriptions);
  return { subscriptions, results: tasks.length > 0 ? await insertTasks(db, conn, tasks) : [] };
}

/**
 * Event subscriptions and publishes on PostgreSQL (rules/events.ts). A
 * publish is one transaction (its own, or the caller's): the read of the
 * subscriptions takes FOR SHARE locks, so an unsubscribe of a row it read
 * waits for its commit; the insert is insert.ts's, its NOTIFY sent on commit.
 */
import type { NewTask } from '../../core/task.js';
import * as rules from '../rules/events.js';
import type { PublishEventResult, Subscription, SubscriptionInput } from '../types.js';
import { run, type PgContext, type Queryable } from './connection.js';
import { decodePostgres } from './encode.js';
import { insertTasks } from './insert.js';
import { inTransaction } from './unique.js';

const NOW = 'clock_timestamp()';
const fromRow = (row: Record<string, unknown>): Subscription => rules.subscriptionFromRow(row, decodePostgres.time);

function table(ctx: PgContext): string {
  return `${ctx.schema}.${rules.SUBSCRIPTION_TABLE}`;
}

export async function saveSubscription(ctx: PgContext, subscription: SubscriptionInput): Promise<Subscription> {
  const result = await run(
    ctx.pool,
    'saving a subscription',
    `INSERT INTO ${table(ctx)} (${rules.SUBSCRIPTION_COLUMNS}) VALUES ($1, $2, $3, $4, ${NOW}, ${NOW})
     ON CONFLICT (event_name, task_type) DO UPDATE SET ${rules.subscriptionUpdate((column) => `EXCLUDED.${column}`, NOW)}
     RETURNING ${rules.SUBSCRIPTION_COLUMNS}`,
    rules.subscriptionValues(subscription),
  );
  return fromRow(result.rows[0]!);
}

export async function deleteSubscription(ctx: PgContext, event: string, taskType: string): Promise<boolean> {
  const result = await run(ctx.pool, 'deleting a subscription', `DELETE FROM ${table(ctx)} WHERE event_name = $1 AND task_type = $2`, [event, taskType]);
  return result.rowCount === 1;
}

export async function listSubscriptions(ctx: PgContext, event: string | null, taskType: string | null): Promise<Subscription[]> {
  const result = await run(
    ctx.pool,
    'listing subscriptions',
    rules.listSubscriptionsSql(table(ctx), (i) => (i <= 2 ? '$1::text' : '$2::text')),
    [event, taskType],
  );
  return result.rows.map(fromRow);
}

export async function publishEvent(
  ctx: PgContext,
  event: string,
  build: (subscriptions: readonly Subscription[]) => readonly NewTask[],
  on: Queryable,
): Promise<PublishEventResult> {
  return inTransaction(on, async (client) => {
    const read = await run(client, 'reading subscriptions', rules.publishSubscriptionsSql(table(ctx), '$1', 'FOR SHARE'), [event]);
    const subscriptions = read.rows.map(fromRow);
    const tasks = build(subscriptions);
    return { subscriptions, results: tasks.length > 0 ? await insertTasks(ctx, tasks, client, ctx.channel) : [] };
  });
}

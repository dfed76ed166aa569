/**
 * Per-task logs on PostgreSQL (rules/logs.ts): a batch of lines written in one transaction on the lease pool; the
 * task row is locked while the fence is judged (FOR UPDATE re-reads its newest version), so a sweep that takes the
 * lease waits for this commit or makes it write nothing. The listing.
 */
import { replaceNul } from '../../core/text.js';
import { logFromRow } from '../rows.js';
import {
  boundLogBatch,
  fenceSql,
  LOG_MARKER_LEVEL,
  LOG_ORDER_SQL,
  liveLeaseSql,
  logMarkerFieldsJson,
  logMarkerMessage,
  planLogAppend,
  type LogAttemptStats,
} from '../rules/index.js';
import type { AppendTaskLogsParams, TaskLogRecord } from '../types.js';
import { beginOn, run, withClient, type PgContext, type Queryable } from './connection.js';
import { decodePostgres, uuidKey } from './encode.js';

type Row = Record<string, unknown>;

export async function appendTaskLogs(ctx: PgContext, params: AppendTaskLogsParams): Promise<boolean> {
  const { lease } = params;
  const id = uuidKey(lease.taskId);
  if (id === null) return false;
  const log = ctx.tables.log;
  return inLogTransaction(ctx, async (client) => {
    const held = await run(
      client,
      'writing task logs',
      `SELECT id FROM ${ctx.tables.task} WHERE id = $1 AND ${fenceSql('$2', '$3', '$4')}${params.final ? '' : ` AND ${liveLeaseSql('now()')}`} FOR UPDATE`,
      [id, lease.workerId, lease.attempt, lease.token],
    );
    if (held.rowCount !== 1) return false;
    const batch = boundLogBatch(params.lines, params.bufferDropped, params.maxLinesPerAttempt);
    if (batch.lines.length === 0 && batch.bufferDropped === 0) return true;
    const stats = (
      await run<Row>(
        client,
        'writing task logs',
        `SELECT attempt, count(*) FILTER (WHERE dropped = 0)::integer AS lines, max(seq) AS max_seq FROM ${log} WHERE task_id = $1 GROUP BY attempt`,
        [id],
      )
    ).rows.map((row): LogAttemptStats => ({ attempt: Number(row.attempt), lines: Number(row.lines), maxSeq: Number(row.max_seq) }));
    const plan = planLogAppend(stats, lease.attempt, batch.lines.length, batch.bufferDropped, params);
    if (batch.lines.length > 0) {
      await run(
        client,
        'writing task logs',
        `INSERT INTO ${log} (task_id, seq, attempt, level, message, fields_json, dropped, logged_at)
         SELECT $1::uuid, s, $2::integer, l, m, f, 0, t FROM unnest($3::integer[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]) AS u(s, l, m, f, t)`,
        [
          id,
          lease.attempt,
          plan.seqs,
          batch.lines.map((line) => line.level),
          // Run-time text: a NUL (which text cannot hold) becomes U+FFFD, as in progress messages (core/text.ts).
          batch.lines.map((line) => replaceNul(line.message)),
          batch.lines.map((line) => line.fieldsJson),
          batch.lines.map((line) => line.loggedAt),
        ],
      );
    }
    for (const drop of plan.drops) {
      let through = drop.phantomThroughSeq;
      if (drop.oldest > 0) {
        const last = await run<Row>(
          client,
          'bounding task logs',
          `SELECT seq FROM ${log} WHERE task_id = $1 AND attempt = $2 AND dropped = 0 ORDER BY seq LIMIT 1 OFFSET $3`,
          [id, drop.attempt, drop.oldest - 1],
        );
        const seq = last.rows[0] ? Number(last.rows[0].seq) : 0;
        if (seq > 0) {
          through = Math.max(through, seq);
          await run(client, 'bounding task logs', `DELETE FROM ${log} WHERE task_id = $1 AND attempt = $2 AND dropped = 0 AND seq <= $3`, [
            id,
            drop.attempt,
            seq,
          ]);
        }
      }
      const old = await run<Row>(
        client,
        'bounding task logs',
        `DELETE FROM ${log} WHERE task_id = $1 AND attempt = $2 AND dropped > 0 RETURNING seq, dropped`,
        [id, drop.attempt],
      );
      const marker = old.rows[0];
      const dropped = Number(marker?.dropped ?? 0) + drop.oldest + drop.phantom;
      through = Math.max(through, Number(marker?.seq ?? 0));
      await run(
        client,
        'bounding task logs',
        `INSERT INTO ${log} (task_id, seq, attempt, level, message, fields_json, dropped, logged_at) VALUES ($1, $2, $3, $4, $5, $6, $7, now())`,
        [id, through, drop.attempt, LOG_MARKER_LEVEL, logMarkerMessage(drop.attempt, dropped), logMarkerFieldsJson(dropped), dropped],
      );
    }
    return true;
  });
}

/** One transaction on the lease pool (a write about a held lease, like progress and steps), rolled back on error. */
function inLogTransaction<T>(ctx: PgContext, body: (client: Queryable) => Promise<T>): Promise<T> {
  return withClient(ctx.leasePool, 'writing task logs', async (client, markBroken) => {
    try {
      await run(client, 'writing task logs', beginOn(ctx.leasePool));
      const result = await body(client);
      await run(client, 'writing task logs', 'COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(markBroken);
      throw error;
    }
  });
}

export async function listTaskLogs(
  ctx: PgContext,
  params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number },
): Promise<TaskLogRecord[]> {
  const id = uuidKey(params.taskId);
  if (id === null) return [];
  const result = await run<Row>(
    ctx.pool,
    'reading task logs',
    `SELECT * FROM ${ctx.tables.log} WHERE task_id = $1 AND ($2::integer IS NULL OR attempt = $2) AND ($3::integer IS NULL OR seq > $3)
     ORDER BY ${LOG_ORDER_SQL} LIMIT $4`,
    [id, params.attempt ?? null, params.afterSeq ?? null, params.limit],
  );
  return result.rows.map((row) => logFromRow(row, decodePostgres));
}

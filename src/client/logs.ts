/**
 * A task's per-task logs (ctx.log) as readers see them: the stored lines with their fields parsed, and the
 * options of a read (validated once for the client, the server and the CLI).
 */
import type { TaskLogLevel } from '../core/logs.js';
import { checkInteger, checkKnownKeys } from '../core/validate.js';
import type { TaskLogRecord } from '../store/types.js';

export const DEFAULT_LOG_READ_LIMIT = 1000;
export const MAX_LOG_READ_LIMIT = 10_000;

export interface TaskLogEntry {
  /** The line's place in the task's log (1, 2, … across attempts): pass the last one as `afterSeq` for the next page. */
  seq: number;
  attempt: number;
  level: TaskLogLevel;
  message: string;
  /** The redacted fields (undefined: none given). */
  fields: Record<string, unknown> | undefined;
  /** > 0: a marker standing for that many older lines of its attempt that the bounds dropped. */
  dropped: number;
  /** The worker's wall clock when the handler logged it. */
  loggedAt: Date;
}

export interface LogReadOptions {
  /** Only this attempt's lines. */
  attempt?: number;
  /** Lines after this seq (paging). */
  afterSeq?: number;
  /** Most lines returned, oldest first. Default 1000, at most 10,000. */
  limit?: number;
}

export function checkLogReadOptions(options: LogReadOptions): { attempt: number | null; afterSeq: number | null; limit: number } {
  checkKnownKeys('logs', options, ['attempt', 'afterSeq', 'limit', 'scope']);
  const read = { attempt: options.attempt ?? null, afterSeq: options.afterSeq ?? null, limit: options.limit ?? DEFAULT_LOG_READ_LIMIT };
  if (read.attempt !== null) checkInteger('logs', 'attempt', read.attempt, { min: 1, max: 1_000_000_000 });
  if (read.afterSeq !== null) checkInteger('logs', 'afterSeq', read.afterSeq, { min: 0, max: 2_000_000_000 });
  checkInteger('logs', 'limit', read.limit, { min: 1, max: MAX_LOG_READ_LIMIT });
  return read;
}

export function taskLogEntryOf(record: TaskLogRecord): TaskLogEntry {
  let fields: Record<string, unknown> | undefined;
  if (record.fieldsJson !== null) {
    try {
      fields = JSON.parse(record.fieldsJson) as Record<string, unknown>;
    } catch {
      fields = { unparsable: record.fieldsJson };
    }
  }
  return {
    seq: record.seq,
    attempt: record.attempt,
    level: record.level,
    message: record.message,
    fields,
    dropped: record.dropped,
    loggedAt: record.loggedAt,
  };
}

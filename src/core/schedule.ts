/**
 * Periodic tasks: a schedule submits one task per tick of a cron expression
 * read in a time zone (croner parses it). This module holds what every layer
 * agrees on: the input and its validation, the stored record, and which ticks
 * are due — a pure function of the schedule's cursor and the database clock.
 *
 * Exactly once: a schedule row carries `lastTickAt`, the cursor (every tick
 * at or before it is done), and `revision`, bumped by every write. A
 * scheduler submits the due ticks and moves the cursor in one transaction
 * whose UPDATE is a compare-and-set on the revision it read: of any number
 * of schedulers that read the same row, one wins, the others change nothing
 * and read again. No leader, no lock held between ticks.
 *
 * Missed ticks (the policy, bounded): when several ticks are due at once (no
 * scheduler ran for a while), the newest always runs — it is the tick whose
 * time has come, however late the scheduler woke — and at most `catchUp` of
 * the older ones run with it (the newest of them); the rest are skipped. The
 * default, 0, skips every missed tick but the last.
 */
import { Cron } from 'croner';
import { InvalidCronError, InvalidTimeZoneError, ValidationError } from './errors.js';
import { checkTaskType } from './definition.js';
import { checkKnownKeys } from './validate.js';
import { checkNoNul } from './text.js';

/** At most this many missed ticks are caught up per schedule. */
export const MAX_CATCH_UP = 100;
const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

/** A schedule as declared in code or sent to the API. */
export interface ScheduleInput {
  /** Unique name: 1-200 of A-Z a-z 0-9 . _ : - */
  key: string;
  taskType: string;
  /** Five fields (minute precision) or six (seconds first), e.g. `0 3 * * *`. */
  cron: string;
  /** IANA time zone the expression is read in. Default UTC. */
  timeZone?: string;
  /** The payload of every task it submits. Default null. */
  payload?: unknown;
  /** Default 0. */
  priority?: number;
  /** Default 3. */
  maxAttempts?: number;
  owner?: string | null;
  /** Missed ticks submitted besides the newest after a downtime (0-100). Default 0: skip them. */
  catchUp?: number;
  /** Omitted: a new schedule is enabled, an existing one keeps its state. */
  enabled?: boolean;
}

/** A validated input, ready for the store. `enabled` null: keep (new: true). */
export interface ScheduleDefinition {
  key: string;
  taskType: string;
  cron: string;
  timeZone: string;
  payloadJson: string;
  priority: number;
  maxAttempts: number;
  owner: string | null;
  catchUp: number;
  enabled: boolean | null;
}

/** A stored schedule. */
export interface Schedule extends Omit<ScheduleDefinition, 'payloadJson' | 'enabled'> {
  payload: unknown;
  enabled: boolean;
  /** Bumped by every write; the compare-and-set token of a tick claim. */
  revision: number;
  /** The cursor: every tick at or before it was submitted or skipped (enabling resets it to now). */
  lastTickAt: Date;
  /** The last task a tick submitted. */
  lastTaskId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const INPUT_KEYS = ['key', 'taskType', 'cron', 'timeZone', 'payload', 'priority', 'maxAttempts', 'owner', 'catchUp', 'enabled'] as const;

export function checkScheduleKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || !KEY_PATTERN.test(key))
    throw new ValidationError('schedule key must be 1-200 characters of A-Z a-z 0-9 . _ : - (starting with a letter or digit)', 'key');
}

/** Validates an input (unknown keys rejected, bad cron / zone with their own codes). */
export function normalizeSchedule(input: ScheduleInput): ScheduleDefinition {
  if (typeof input !== 'object' || input === null) throw new ValidationError('a schedule must be an object', 'schedule');
  try {
    checkKnownKeys('schedule', input, INPUT_KEYS);
  } catch (error) {
    throw new ValidationError((error as Error).message, (error as ValidationError).field);
  }
  checkScheduleKey(input.key);
  checkTaskType(input.taskType);
  const timeZone = input.timeZone ?? 'UTC';
  compileCron(input.cron, timeZone);
  const payloadJson = JSON.stringify(input.payload ?? null);
  if (payloadJson === undefined) throw new ValidationError('payload must be JSON-serializable', 'payload');
  const definition: ScheduleDefinition = {
    key: input.key,
    taskType: input.taskType,
    cron: input.cron.trim(),
    timeZone,
    payloadJson,
    priority: integerIn(input.priority ?? 0, 'priority', -1000, 1000),
    maxAttempts: integerIn(input.maxAttempts ?? 3, 'maxAttempts', 1, 100),
    owner: input.owner ?? null,
    catchUp: integerIn(input.catchUp ?? 0, 'catchUp', 0, MAX_CATCH_UP),
    enabled: input.enabled ?? null,
  };
  if (definition.owner !== null && (typeof definition.owner !== 'string' || definition.owner.length === 0 || definition.owner.length > 255))
    throw new ValidationError('owner must be a string of 1 to 255 characters, or null', 'owner');
  checkNoNul('owner', definition.owner, 'schedule');
  if (definition.enabled !== null && typeof definition.enabled !== 'boolean') throw new ValidationError('enabled must be true or false', 'enabled');
  return definition;
}

/** The parsed expression; InvalidCronError / InvalidTimeZoneError otherwise. */
export function compileCron(expression: unknown, timeZone: unknown): Cron {
  if (typeof timeZone !== 'string' || !isTimeZone(timeZone)) throw new InvalidTimeZoneError(String(timeZone));
  if (typeof expression !== 'string' || expression.trim().length === 0 || expression.length > 200)
    throw new InvalidCronError(String(expression), 'give 5 or 6 space-separated fields (at most 200 characters)');
  try {
    return new Cron(expression.trim(), { timezone: timeZone, paused: true });
  } catch (error) {
    throw new InvalidCronError(expression, (error as Error).message, { cause: error });
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone.length > 0;
  } catch {
    return false;
  }
}

function integerIn(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new ValidationError(`${field} must be an integer from ${min} to ${max}, got ${String(value)}`, field);
  return value;
}

export interface DueTicks {
  /** The ticks to submit, oldest first (the newest due tick always among them). */
  run: Date[];
  /** The new cursor: the newest due tick. */
  cursor: Date;
}

type CronSource = Pick<Schedule, 'cron' | 'timeZone' | 'catchUp' | 'lastTickAt'>;

/** Ticks after the cursor and at or before `now`, by the missed-tick policy; null when none is due. */
export function dueTicks(schedule: CronSource, now: Date): DueTicks | null {
  const cron = compileCron(schedule.cron, schedule.timeZone);
  const first = cron.nextRun(schedule.lastTickAt);
  if (!first || first.getTime() > now.getTime()) return null;
  const keep = schedule.catchUp + 1;
  // Only the newest `keep` ticks can run: look back from now in growing windows instead of stepping
  // through every tick since the cursor (a per-second schedule after a day of downtime).
  for (let span = 60_000; ; span *= 8) {
    const from = Math.max(now.getTime() - span, schedule.lastTickAt.getTime());
    const run = newestTicks(cron, new Date(from), now, keep);
    if (run.length >= keep || from === schedule.lastTickAt.getTime()) return { run, cursor: run[run.length - 1]! };
  }
}

/** Up to `keep` newest ticks in (from, to]. */
function newestTicks(cron: Cron, from: Date, to: Date, keep: number): Date[] {
  const ticks: Date[] = [];
  for (let next = cron.nextRun(from); next && next.getTime() <= to.getTime(); next = cron.nextRun(next)) {
    ticks.push(next);
    if (ticks.length > keep) ticks.shift();
  }
  return ticks;
}

/** The next `count` ticks after max(cursor, now): what the dashboard shows. None while disabled. */
export function nextTicks(schedule: CronSource & { enabled: boolean }, now: Date, count: number): Date[] {
  if (!schedule.enabled) return [];
  const after = schedule.lastTickAt.getTime() > now.getTime() ? schedule.lastTickAt : now;
  return compileCron(schedule.cron, schedule.timeZone).nextRuns(count, after);
}

/** The idempotency key of the task a tick submits: one per schedule and tick. */
export function tickKey(scheduleKey: string, tick: Date): string {
  return `schedule:${scheduleKey}:${tick.toISOString()}`;
}

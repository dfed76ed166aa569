/**
 * Periodic tasks (src/core/schedule.ts) for operators and code: save a
 * schedule (a cron expression in a time zone, the task it submits, the
 * missed-tick policy), list them with their next runs, enable or disable
 * one at run time, delete one. Workers' schedulers see a change at their
 * next pass (at most scheduleRefreshMs later).
 */
import { NotFoundError, ValidationError } from '../core/errors.js';
import { checkScheduleKey, nextTicks, normalizeSchedule, type Schedule, type ScheduleInput } from '../core/schedule.js';
import { scheduleStoreOf, type ScheduleStore } from '../store/schedules.js';
import type { Store } from '../store/types.js';

export type { Schedule, ScheduleInput } from '../core/schedule.js';

/** A schedule and its next runs by the database clock (none while disabled). */
export interface ScheduleView extends Schedule {
  nextRuns: Date[];
}

const MAX_NEXT_RUNS = 20;

export class ScheduleApi {
  private backing: Promise<ScheduleStore> | null = null;

  constructor(private readonly store: Store) {}

  /** Creates or replaces the schedule `input.key`; `enabled` omitted keeps an existing schedule's state. */
  async save(input: ScheduleInput): Promise<ScheduleView> {
    const schedule = normalizeSchedule(input);
    return this.view(await (await this.schedules()).saveSchedule({ schedule }), await this.store.now(), 3);
  }

  /** Every schedule by key, each with its next `nextRuns` runs (default 3). */
  async list(options: { nextRuns?: number } = {}): Promise<ScheduleView[]> {
    const count = nextRunCount(options.nextRuns);
    const [rows, now] = await Promise.all([(await this.schedules()).listSchedules(), this.store.now()]);
    return rows.map((row) => this.view(row, now, count));
  }

  async get(key: string, options: { nextRuns?: number } = {}): Promise<ScheduleView | null> {
    checkScheduleKey(key);
    const count = nextRunCount(options.nextRuns);
    const [row, now] = await Promise.all([(await this.schedules()).getSchedule({ key }), this.store.now()]);
    return row ? this.view(row, now, count) : null;
  }

  /** Enabling a disabled schedule starts from now: the ticks it slept through are not caught up. */
  async setEnabled(key: string, enabled: boolean): Promise<ScheduleView> {
    checkScheduleKey(key);
    if (typeof enabled !== 'boolean') throw new ValidationError('enabled must be true or false', 'enabled');
    const row = await (await this.schedules()).setScheduleEnabled({ key, enabled });
    if (!row) throw new NotFoundError('schedule', key);
    return this.view(row, await this.store.now(), 3);
  }

  /** Tasks it already submitted stay. */
  async delete(key: string): Promise<void> {
    checkScheduleKey(key);
    if (!(await (await this.schedules()).deleteSchedule({ key }))) throw new NotFoundError('schedule', key);
  }

  private view(schedule: Schedule, now: Date, count: number): ScheduleView {
    return { ...schedule, nextRuns: count === 0 ? [] : nextTicks(schedule, now, count) };
  }

  private schedules(): Promise<ScheduleStore> {
    this.backing ??= scheduleStoreOf(this.store);
    return this.backing;
  }
}

function nextRunCount(value: unknown): number {
  const count = value ?? 3;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_NEXT_RUNS)
    throw new ValidationError(`nextRuns must be an integer from 0 to ${MAX_NEXT_RUNS}`, 'nextRuns');
  return count;
}

/**
 * Periodic tasks (src/core/schedule.ts): every worker runs this small
 * service; the store's compare-and-set makes each tick submitted once
 * however many run it, so no leader is elected. A pass reads the database
 * clock and the schedule table, claims the due ticks of each enabled
 * schedule, and arms one timer for the nearest next tick — never longer than
 * scheduleRefreshMs, so schedules saved elsewhere are seen within it. When
 * nothing is due a pass costs two short reads.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { uuidv7 } from '../core/ids.js';
import { dueTicks, nextTicks, tickKey, type DueTicks, type Schedule, type ScheduleDefinition } from '../core/schedule.js';
import type { NewTask, Task } from '../core/task.js';
import { scheduleStoreOf, type ScheduleStore } from '../store/schedules.js';
import type { Store } from '../store/types.js';
import type { Announcer } from './events.js';

export interface PeriodicSchedulerOptions {
  /** The longest sleep between two passes; 0: no scheduler in this worker. */
  scheduleRefreshMs: number;
  /** Declared in code: saved (upserted) by the first pass that reaches the store. */
  schedules: readonly ScheduleDefinition[];
}

export interface PassResult {
  /** Tasks this pass created. */
  submitted: Task[];
  /** When the next pass is wanted. */
  nextInMs: number;
}

/** A tick a timer wakes for a few ms late rather than early: an early pass finds nothing and sleeps again. */
const WAKE_SLACK_MS = 5;

export class PeriodicScheduler {
  private timer: TimerHandle = undefined;
  private passing: Promise<void> | null = null;
  private stopped = false;
  private declared = false;
  private backing: Promise<ScheduleStore> | null = null;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly events: Announcer,
    private readonly options: PeriodicSchedulerOptions,
    /** Told the task types of each claim's new tasks (this process's claims wake at once). */
    private readonly submitted: (taskTypes: string[]) => void = () => undefined,
  ) {}

  start(): void {
    if (this.options.scheduleRefreshMs <= 0) return;
    void this.pass();
  }

  /** No more passes; resolves when the one in flight has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.passing;
  }

  /** One pass at `now` (default: the database clock; tests pass a later time to simulate downtime). */
  async runDue(now?: Date): Promise<PassResult> {
    const schedules = await this.schedules();
    if (!this.declared) {
      for (const schedule of this.options.schedules) await schedules.saveSchedule({ schedule });
      this.declared = true;
    }
    const at = now ?? (await this.store.now());
    const result: PassResult = { submitted: [], nextInMs: this.options.scheduleRefreshMs };
    for (const schedule of await schedules.listSchedules()) {
      if (!schedule.enabled) continue;
      try {
        await this.runSchedule(schedules, schedule, at, result);
      } catch (error) {
        this.events.emit('error', { operation: `schedule ${schedule.key}`, error });
      }
    }
    return result;
  }

  private async runSchedule(schedules: ScheduleStore, schedule: Schedule, now: Date, result: PassResult): Promise<void> {
    const due = dueTicks(schedule, now);
    if (due) {
      const claim = await schedules.claimTicks({ key: schedule.key, revision: schedule.revision, cursor: due.cursor, tasks: tasksFor(schedule, due) });
      // Lost: another scheduler claimed these ticks — or the schedule changed under us and nobody did: read again soon.
      if (!claim.claimed) result.nextInMs = 0;
      const created = claim.tasks.filter((r) => r.created).map((r) => r.task);
      if (claim.claimed) this.events.emit('scheduled', { scheduleKey: schedule.key, ticks: due.run, tasks: created });
      result.submitted.push(...created);
    }
    const [next] = nextTicks({ ...schedule, lastTickAt: due?.cursor ?? schedule.lastTickAt }, now, 1);
    if (next) result.nextInMs = Math.min(result.nextInMs, Math.max(0, next.getTime() - now.getTime()));
  }

  private pass(): Promise<void> {
    this.passing ??= this.runDue()
      .then(
        (result) => {
          const types = [...new Set(result.submitted.map((task) => task.taskType))];
          if (types.length > 0) this.submitted(types);
          this.arm(result.nextInMs + WAKE_SLACK_MS);
        },
        (error: unknown) => {
          this.events.emit('error', { operation: 'schedules', error });
          this.arm(this.options.scheduleRefreshMs);
        },
      )
      .finally(() => {
        this.passing = null;
      });
    return this.passing;
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => void this.pass(), Math.min(ms, this.options.scheduleRefreshMs));
  }

  private schedules(): Promise<ScheduleStore> {
    this.backing ??= scheduleStoreOf(this.store);
    return this.backing;
  }
}

/** One task per tick to run; the idempotency key names the schedule and the tick. */
function tasksFor(schedule: Schedule, due: DueTicks): NewTask[] {
  const payloadJson = JSON.stringify(schedule.payload);
  return due.run.map((tick) => ({
    id: uuidv7(),
    taskType: schedule.taskType,
    payloadJson,
    priority: schedule.priority,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts: schedule.maxAttempts,
    owner: schedule.owner,
    idempotencyKey: tickKey(schedule.key, tick),
    traceId: null,
  }));
}

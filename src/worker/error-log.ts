/**
 * What a worker logs on its own, without anyone attaching a logger: store
 * operations that fail (a database down or not migrated must not be silent)
 * and limits that leave its slots idle. Throttled per operation: the first
 * failure at once, then one line per interval with how many were suppressed.
 * `logger: false` turns it off; attachLogger gives the full event log.
 */
import pino, { type Logger } from 'pino';
import type { AnyTaskDefinition } from '../core/definition.js';

export const ERROR_LOG_INTERVAL_MS = 30_000;

export interface StoreProblem {
  operation: string;
  code: string | null;
  message: string;
  /** Wall-clock time of the first failure in the current run of failures. */
  since: Date;
}

export function defaultWorkerLogger(): Logger {
  return pino({ name: 'tasklease', level: 'warn' }, pino.destination({ dest: 2, sync: false }));
}

/** The worker's own log and its view of the store's health (stats and workerHealth read `problem`). */
export class WorkerLog {
  private readonly lastLogged = new Map<string, { at: number; suppressed: number }>();
  /** The store operation failing now; null once the store answers again. */
  problem: StoreProblem | null = null;

  constructor(
    private readonly workerId: string,
    private readonly logger: Logger | null,
    private readonly now: () => number,
    private readonly intervalMs = ERROR_LOG_INTERVAL_MS,
  ) {}

  storeAnswered(): void {
    this.problem = null;
  }

  storeError(operation: string, error: unknown): void {
    const { code, message } = describe(error);
    this.problem ??= { operation, code, message, since: new Date() };
    if (!this.logger) return;
    const suppressed = this.lastLogged.get(operation)?.suppressed ?? 0;
    if (this.throttled(operation)) return;
    this.logger.error({ workerId: this.workerId, operation, errorCode: code ?? undefined, suppressed }, `tasklease worker: ${operation} failed: ${message}`);
  }

  /** True when `key` was logged less than an interval ago (counted as suppressed); else it counts as logged now. */
  private throttled(key: string): boolean {
    const now = this.now();
    const last = this.lastLogged.get(key);
    if (last && now - last.at < this.intervalMs) {
      last.suppressed += 1;
      return true;
    }
    this.lastLogged.set(key, { at: now, suppressed: 0 });
    return false;
  }

  /** Renewals that use up much of the slack a lease leaves: live leases will be given up next (throttled like errors). */
  leasesAtRisk(event: { waitMs: number; roundTripMs: number; slackMs: number }): void {
    if (!this.logger || this.throttled('leasesAtRisk')) return;
    this.logger.warn(
      { workerId: this.workerId, waitMs: Math.round(event.waitMs), roundTripMs: Math.round(event.roundTripMs), slackMs: event.slackMs },
      `tasklease worker: a lease renewal took ${Math.round(event.waitMs + event.roundTripMs)} ms of the ${event.slackMs} ms a lease leaves it ` +
        `(${Math.round(event.waitMs)} ms waiting for a connection): leases are close to being given up. Raise leaseMs (or leasePoolSize, ` +
        'if the wait is long), or lower concurrency',
    );
  }

  /**
   * A heartbeat interval of more than a third of the slack a lease leaves: one slow renewal and the leases are
   * given up. (Options already require heartbeatIntervalMs ≤ leaseMs / 2; a third of the lease is the usual choice.)
   */
  warnIfLeasesTight(leaseMs: number, heartbeatIntervalMs: number, slackMs: number): void {
    if (slackMs >= heartbeatIntervalMs) return;
    this.logger?.warn(
      { workerId: this.workerId, leaseMs, heartbeatIntervalMs, slackMs },
      `tasklease worker: with leaseMs ${leaseMs} and heartbeatIntervalMs ${heartbeatIntervalMs} a renewal that takes longer than ${slackMs} ms ` +
        `loses its leases; keep heartbeatIntervalMs at most a third of leaseMs (${Math.floor(leaseMs / 3)})`,
    );
  }

  /** Local concurrency the limits can never fill is a misconfiguration nobody would notice otherwise. */
  warnIfLimitsBind(limits: { usable: number; global: number; perType: Record<string, number> }, concurrency: number, prefetch: number): void {
    const { usable, global, perType } = limits;
    if (concurrency + prefetch <= usable) return;
    this.logger?.warn(
      { workerId: this.workerId, concurrency, prefetch, limits: { global, perType } },
      `tasklease worker: concurrency ${concurrency} + prefetch ${prefetch} is more than the limits let this worker hold (${usable}: global ${global}, ` +
        `per type ${JSON.stringify(perType)}); raise them with client.policies.update() or the globalConcurrency / typeConcurrency options`,
    );
  }
  /** A batch type whose calls can never fill batch.maxSize (slots or its type limit cap them): full batches are what it was declared for. */
  warnIfBatchesCapped(tasks: readonly AnyTaskDefinition[], limits: { global: number; perType: Record<string, number> }, concurrency: number): void {
    for (const task of tasks) {
      if (!task.executeBatch || !task.batch) continue;
      const cap = Math.min(concurrency, limits.global, limits.perType[task.type] ?? Infinity);
      if (cap === 0 || cap >= task.batch.maxSize) continue;
      this.logger?.warn(
        { workerId: this.workerId, taskType: task.type, maxSize: task.batch.maxSize, cap },
        `tasklease worker: task ${task.type} declares batch.maxSize ${task.batch.maxSize}, but concurrency and the limits let a call hold ${cap} tasks at most ` +
          '(concurrency counts tasks, not calls); raise concurrency, or the type limit with client.policies.update() or typeConcurrency',
      );
    }
  }
}

/** The code and first line of a store error (messages of store errors name the operation, never payloads). */
export function describe(error: unknown): { code: string | null; message: string } {
  const code = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : null;
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 500);
  return { code, message };
}

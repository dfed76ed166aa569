/**
 * Adaptive limits, the worker's side (core/adaptive.ts): every worker serving
 * an adaptive type evaluates it every adaptiveIntervalMs — reads the window's
 * attempt outcomes from the database and, when the rule (store/rules/
 * adaptive.ts) says so, steps the type's limit by a compare-and-set. Any
 * number of workers may evaluate at once: the store's compare-and-set on the
 * limit and the cooldown makes one step, the others find they lost. No leader.
 */
import type { AdaptiveState } from '../core/adaptive.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { adaptiveStoreOf, type AdaptiveStore } from '../store/adaptive.js';
import { nextLimit } from '../store/rules/adaptive.js';
import type { Store } from '../store/types.js';
import type { Announcer } from './events.js';

export interface AdaptiveControllerOptions {
  /** Period of the evaluations; 0: this worker never evaluates. */
  adaptiveIntervalMs: number;
}

export class AdaptiveController {
  private timer: TimerHandle = undefined;
  private passing: Promise<void> | null = null;
  private stopped = false;
  private backing: Promise<AdaptiveStore> | null = null;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly events: Announcer,
    private readonly taskTypes: readonly string[],
    private readonly options: AdaptiveControllerOptions,
  ) {}

  start(): void {
    if (this.options.adaptiveIntervalMs <= 0 || this.taskTypes.length === 0) return;
    this.arm();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.passing;
  }

  /** One evaluation of every adaptive type this worker serves (tests call it directly). */
  async evaluate(): Promise<void> {
    const adaptive = await this.adaptive();
    for (const state of await adaptive.listAdaptive()) {
      if (!state.enabled || !this.taskTypes.includes(state.taskType)) continue;
      try {
        await this.evaluateType(adaptive, state);
      } catch (error) {
        this.events.emit('error', { operation: `adaptive limit ${state.taskType}`, error });
      }
    }
  }

  private async evaluateType(adaptive: AdaptiveStore, state: AdaptiveState): Promise<void> {
    const now = await this.store.now();
    if (state.overridden) {
      // An override with an end resumes when its time is up; one without waits for an operator.
      if (state.overrideUntil !== null && state.overrideUntil.getTime() <= now.getTime() && (await adaptive.resume({ state, expired: true })))
        this.events.emit('limitChanged', {
          taskType: state.taskType,
          from: state.currentLimit,
          to: state.currentLimit,
          kind: 'resume',
          cause: 'override expired',
        });
      return;
    }
    const sinceChange = now.getTime() - state.changedAt.getTime();
    if (sinceChange < state.cooldownMs) return;
    const since = new Date(now.getTime() - Math.min(state.windowMs, sinceChange));
    const counts = await adaptive.outcomeCounts({ since, scope: { taskType: state.taskType } });
    const step = nextLimit(state, counts, now.getTime() - since.getTime());
    if (step && (await adaptive.step({ state, step, now })))
      this.events.emit('limitChanged', { taskType: state.taskType, from: state.currentLimit, to: step.to, kind: step.kind, cause: step.cause });
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      this.passing = this.evaluate()
        .catch((error: unknown) => this.events.emit('error', { operation: 'adaptive limits', error }))
        .finally(() => {
          this.passing = null;
          this.arm();
        });
    }, this.options.adaptiveIntervalMs);
  }

  private adaptive(): Promise<AdaptiveStore> {
    this.backing ??= adaptiveStoreOf(this.store);
    return this.backing;
  }
}

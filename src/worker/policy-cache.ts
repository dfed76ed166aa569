/**
 * The worker's view of the runtime policies, refreshed every heartbeat
 * period together with its row in the worker registry: the retry options of
 * each type (merged once, policy over definition over worker) and the
 * effective limits (what the claim will allow), for stats, health and the
 * start-up warning when local concurrency cannot be used.
 */
import { hostname } from 'node:os';
import type { TimerHandle } from '../core/clock.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { GLOBAL_POLICY_KEY, typePolicyKey } from '../core/policy-keys.js';
import { mergeRetry, type RetryOptions } from '../core/retry.js';
import type { Policy, Store } from '../store/types.js';
import type { Announcer } from './events.js';
import type { ResolvedWorkerOptions } from './options.js';

export interface EffectiveLimits {
  /** Cluster-wide cap on leased tasks (GLOBAL policy, else the worker's globalConcurrency). */
  global: number;
  /** Per-type caps (TYPE:<type> policy, else typeConcurrency); 0 for a disabled type. */
  perType: Record<string, number>;
  /** The most tasks this worker could ever hold at once under these limits. */
  usable: number;
}

export class PolicyCache {
  private policies = new Map<string, Policy>();
  private retries = new Map<string, RetryOptions>();
  private refreshing: Promise<void> = Promise.resolve();
  private timer: TimerHandle = undefined;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedWorkerOptions,
    private readonly registry: ReadonlyMap<string, AnyTaskDefinition>,
    private readonly events: Announcer,
  ) {}

  /** Refreshes now and every heartbeat period; resolves when the first refresh is done (claims wait for it). */
  start(): Promise<void> {
    const { clock, heartbeatIntervalMs } = this.options;
    this.timer = clock.setInterval(() => void this.refresh(), heartbeatIntervalMs);
    return this.refresh();
  }

  /** No more refreshes; waits for one in flight, which would otherwise write the registry row back after it is deleted. */
  async stop(): Promise<void> {
    this.options.clock.clearInterval(this.timer);
    await this.refreshing;
  }

  /** Registers the worker and re-reads the policies. */
  private refresh(): Promise<void> {
    this.refreshing = this.load();
    return this.refreshing;
  }

  retryFor(taskType: string): RetryOptions {
    let retry = this.retries.get(taskType);
    if (!retry) {
      const base = this.policies.get(typePolicyKey(taskType))?.retryBaseDelayMs ?? this.policies.get(GLOBAL_POLICY_KEY)?.retryBaseDelayMs;
      retry = mergeRetry(this.options.retry, this.registry.get(taskType)?.retry, base);
      this.retries.set(taskType, retry);
    }
    return retry;
  }

  limits(): EffectiveLimits {
    const globalPolicy = this.policies.get(GLOBAL_POLICY_KEY);
    const global = globalPolicy?.enabled === false ? 0 : (globalPolicy?.maxConcurrency ?? this.options.globalConcurrency);
    const perType: Record<string, number> = {};
    for (const type of this.registry.keys()) {
      const policy = this.policies.get(typePolicyKey(type));
      perType[type] = policy?.enabled === false ? 0 : (policy?.maxConcurrency ?? this.options.typeConcurrency);
    }
    const usable = Math.min(
      global,
      Object.values(perType).reduce((sum, limit) => sum + limit, 0),
    );
    return { global, perType, usable };
  }

  private async load(): Promise<void> {
    try {
      const o = this.options;
      await this.store.registerWorker({
        worker: { workerId: o.workerId, host: hostname(), pid: process.pid, taskTypes: [...this.registry.keys()], concurrency: o.concurrency },
      });
      this.policies = new Map((await this.store.listPolicies()).map((policy) => [policy.policyKey, policy]));
      this.retries.clear();
      this.events.storeAnswered();
    } catch (error) {
      this.events.emit('error', { operation: 'registerWorker', error });
    }
  }
}

/**
 * Gauges read at scrape time rather than counted from events: always right,
 * even for a worker attached mid-run or one that lost a lease. Sums over the
 * workers and stores attached to one metric set (one process).
 */
import { Gauge, type Registry } from 'prom-client';
import type { Dialect } from '../store/types.js';
import type { PoolStats } from '../store/pool-stats.js';
import type { WorkerStats } from '../worker/worker.js';
import { RATE_SCOPE_KINDS, type RateUsage } from '../client/rates.js';

export interface GaugeSources {
  /** Stats of the workers attached now. */
  workers: () => WorkerStats[];
  /** Dead letters waiting; null keeps the last value. */
  deadLetters: () => Promise<number | null>;
  /** Connection pools of the attached stores that have one. */
  pools: () => { dialect: Dialect; stats: PoolStats }[];
  /** Share of recent lease renewals that kept the lease (RenewalWindow). */
  renewalRate: () => number;
  /** The wake-up state of each attached store that reports one (PostgresStore.wakeups). */
  wakeups: () => string[];
  /** Rate scopes spent and starts in their windows, by scope kind (client/rates.ts); null keeps the last values. */
  rates: () => Promise<RateUsage | null>;
  /** The limit in force of each adaptive type (attached stores); null keeps the last values. */
  adaptiveLimits: () => Promise<{ taskType: string; limit: number }[] | null>;
}

const POOL_FIELDS = {
  active: "Database connections lent out now (the seed's hikaricp_connections_active), by dialect.",
  idle: 'Database connections open and free (hikaricp_connections_idle), by dialect.',
  max: 'The most connections the pools open (hikaricp_connections_max), by dialect.',
  pending: 'Callers waiting for a connection (hikaricp_connections_pending), by dialect.',
} as const satisfies Record<keyof PoolStats, string>;

export function defineGauges(registry: Registry, sources: GaugeSources): void {
  const registers = [registry];
  const sumOfWorkers = (field: 'active' | 'concurrency'): number => sources.workers().reduce((sum, s) => sum + s[field], 0);
  new Gauge({
    name: 'async_task_active_count',
    help: 'Handlers running now in this process (attached workers).',
    registers,
    collect() {
      this.set(sumOfWorkers('active'));
    },
  });
  new Gauge({
    name: 'async_task_local_max_concurrency',
    help: "Handler slots in this process (sum of attached workers' concurrency).",
    registers,
    collect() {
      this.set(sumOfWorkers('concurrency'));
    },
  });
  new Gauge({
    name: 'async_task_registered_types',
    help: 'Task types the attached workers run: one series per type, valued by how many workers run it.',
    labelNames: ['task_type'],
    registers,
    collect() {
      this.reset(); // a type whose workers all stopped disappears
      for (const stats of sources.workers()) for (const type of stats.taskTypes) this.inc({ task_type: type });
    },
  });
  new Gauge({
    name: 'async_task_dead_letter_queue_size',
    help: 'Dead letters neither replayed nor archived (attached stores).',
    registers,
    async collect() {
      const size = await sources.deadLetters();
      if (size !== null) this.set(size);
    },
  });
  new Gauge({
    name: 'async_task_adaptive_limit',
    help: 'The concurrency limit in force of each adaptive task type (its TYPE policy, which its controller moves), attached stores.',
    labelNames: ['task_type'],
    registers,
    async collect() {
      const limits = await sources.adaptiveLimits();
      if (limits === null) return;
      this.reset(); // a type turned off disappears
      for (const { taskType, limit } of limits) this.set({ task_type: taskType }, limit);
    },
  });
  new Gauge({
    name: 'async_task_lease_renewal_success_rate',
    help: 'Share of lease renewals in the last window (default 5 min) that kept their lease; 1 when none was attempted.',
    registers,
    collect() {
      this.set(sources.renewalRate());
    },
  });
  new Gauge({
    name: 'async_task_wakeups_deaf',
    help: 'Attached stores whose LISTEN connection does not hear its own NOTIFY (PostgreSQL behind a transaction pooler?): workers poll instead.',
    registers,
    collect() {
      this.set(sources.wakeups().filter((state) => state === 'deaf').length);
    },
  });
  // Both rate gauges from one read per scrape: the first collect reads, the second takes its answer.
  let pending: Promise<RateUsage | null> | null = null;
  const rates = (): Promise<RateUsage | null> => {
    pending ??= sources.rates().finally(() => setImmediate(() => (pending = null)));
    return pending;
  };
  for (const [field, name, help] of [
    [
      'spent',
      'async_task_rate_limited_scopes',
      'Rate scopes (rules/rates.ts) whose window holds their limit now: their tasks wait for the next slot, by scope kind (global, type, owner, key).',
    ],
    ['starts', 'async_task_rate_window_starts', 'Starts in the windows of the rate scopes, by scope kind (global, type, owner, key).'],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['scope_kind'],
      registers,
      async collect() {
        const usage = await rates();
        for (const kind of RATE_SCOPE_KINDS) this.set({ scope_kind: kind }, usage === null ? 0 : usage[field][kind]);
      },
    });
  }
  for (const [field, help] of Object.entries(POOL_FIELDS) as [keyof PoolStats, string][]) {
    new Gauge({
      name: `async_task_db_connections_${field}`,
      help,
      labelNames: ['dialect'],
      registers,
      collect() {
        this.reset();
        for (const { dialect, stats } of sources.pools()) this.inc({ dialect }, stats[field]);
      },
    });
  }
}

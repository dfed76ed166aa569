/**
 * /actuator/metrics/<dotted.name> in Spring's answer shape (name, description,
 * baseUnit, measurements). The seed's look-ups are computed here; any other
 * name is the Prometheus metric with dots as underscores.
 */
import { NotFoundError } from '../core/errors.js';
import { hasPoolStats, type PoolStats } from '../store/pool-stats.js';
import type { RouteContext } from './routes.js';

export interface MetricAnswer {
  name: string;
  description: string;
  baseUnit: string | null;
  measurements: { statistic: string; value: number }[];
  availableTags: { tag: string; values: string[] }[];
}

type Computed = (context: RouteContext) => Promise<MetricAnswer> | MetricAnswer;

const answer = (name: string, description: string, value: number, baseUnit: string | null = null, tags: MetricAnswer['availableTags'] = []): MetricAnswer => ({
  name,
  description,
  baseUnit,
  measurements: [{ statistic: 'VALUE', value }],
  availableTags: tags,
});

/** The store's pool figures when it has a pool (PostgreSQL, MySQL/MariaDB); the seed reads HikariCP's. */
function pool(context: RouteContext): PoolStats | null {
  const store = context.client.store;
  return hasPoolStats(store) ? store.poolStats() : null;
}

async function counterSum(context: RouteContext, name: string): Promise<number> {
  const metric = context.metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  return (await metric.get()).values.reduce((sum, v) => sum + v.value, 0);
}

const COMPUTED: Record<string, Computed> = {
  'async.task.dead.letter.queue.size': async (context) =>
    answer('async.task.dead.letter.queue.size', 'Dead letters neither replayed nor archived', await context.client.deadLetters.size()),
  'async.task.registered.types': (context) => {
    const types = context.worker?.taskTypes ?? [];
    return answer('async.task.registered.types', 'Task types the worker in this process has handlers for', types.length, null, [
      { tag: 'task_type', values: types },
    ]);
  },
  'async.task.lease.renewal.success.rate': async (context) => {
    const [total, success] = [await counterSum(context, 'async_task_lease_renewal_total'), await counterSum(context, 'async_task_lease_renewal_success_total')];
    return answer(
      'async.task.lease.renewal.success.rate',
      'Lease renewals that kept the lease, of all attempted (1 when none yet)',
      total === 0 ? 1 : success / total,
    );
  },
};

for (const field of ['active', 'idle', 'max', 'pending'] as const) {
  for (const prefix of ['hikaricp.connections', 'tasklease.pool.connections']) {
    COMPUTED[`${prefix}.${field}`] = (context) => {
      const p = pool(context);
      if (!p) throw new NotFoundError('metric (this store has no connection pool gauge)', `${prefix}.${field}`);
      return answer(`${prefix}.${field}`, `Database pool connections: ${field}`, p[field], 'connections');
    };
  }
}

export function metricNames(context: RouteContext): string[] {
  const prometheus = context.metrics.registry.getMetricsAsArray().map((m) => m.name.replaceAll('_', '.'));
  return [...new Set([...Object.keys(COMPUTED), ...prometheus])].sort();
}

export async function lookUpMetric(context: RouteContext, name: string): Promise<MetricAnswer> {
  const computed = COMPUTED[name];
  if (computed) return computed(context);
  const metric = context.metrics.registry.getSingleMetric(name.replaceAll('.', '_'));
  if (!metric) throw new NotFoundError('metric', name);
  const { help, values } = await metric.get();
  const tagNames = [...new Set(values.flatMap((v) => Object.keys(v.labels)))];
  return {
    name,
    description: help,
    baseUnit: name.endsWith('.seconds') ? 'seconds' : null,
    measurements: [
      {
        statistic: 'VALUE',
        value: values.filter((v) => !('metricName' in v) || !String(v.metricName).endsWith('_bucket')).reduce((sum, v) => sum + v.value, 0),
      },
    ],
    availableTags: tagNames.map((tag) => ({ tag, values: [...new Set(values.map((v) => String(v.labels[tag] ?? '')).filter(Boolean))] })),
  };
}

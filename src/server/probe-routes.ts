/**
 * Probes and metrics at the seed's paths (article 2): Kubernetes liveness,
 * readiness and startup, the aggregate /actuator/health, the worker document
 * /actuator/health/asyncTaskWorker, metric look-ups /actuator/metrics/<name>
 * and Prometheus text. Probes answer 503 when DOWN, 200 when UP or DEGRADED.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { controlPlaneHealth, workerHealth, worstStatus, type HealthReport } from '../observe/health.js';
import { ROLES_BY_ACCESS, type Access, type RouteContext, type RouteSpec } from './routes.js';
import { lookUpMetric, metricNames } from './metric-lookup.js';

const eventLoop = monitorEventLoopDelay({ resolution: 20 });
eventLoop.enable();
const startedAt = Date.now();
const tags = ['probes'];

/**
 * The whole report, or only `{ status }`: details (worker ids, task types, counts by status, the schema
 * version) are for operators (option healthDetails, as Spring Boot's show-details=when-authorized).
 */
function send(request: FastifyRequest, reply: FastifyReply, context: RouteContext, report: { status: string }): FastifyReply {
  return reply.code(report.status === 'DOWN' ? 503 : 200).send(showsDetails(request, context) ? report : { status: report.status });
}

function showsDetails(request: FastifyRequest, context: RouteContext): boolean {
  if (context.healthDetails !== 'when-authorized') return context.healthDetails === 'always';
  const role = request.principal?.role;
  return role !== undefined && ROLES_BY_ACCESS.operator.includes(role);
}

function liveness(): HealthReport<{ uptimeSeconds: number; eventLoopDelayP99Ms: number }> {
  return {
    status: 'UP',
    details: { uptimeSeconds: Math.round((Date.now() - startedAt) / 1000), eventLoopDelayP99Ms: Math.round(eventLoop.percentile(99) / 1e6) },
  };
}

/** The seed's AsyncTaskWorkerHealthIndicator document, its field names included. */
function workerDocument(context: RouteContext): HealthReport<Record<string, unknown>> {
  if (!context.worker) return { status: 'DOWN', details: { status: 'no worker runs in this server process' } };
  const report = workerHealth(context.worker);
  const d = report.details;
  return {
    status: report.status,
    details: {
      worker_id: d.workerId,
      state: d.state,
      active_tasks: d.active,
      buffered_tasks: d.buffered,
      max_concurrency: d.maxConcurrency,
      utilization: `${(d.utilization * 100).toFixed(2)}%`,
      registered_task_types: d.registeredTaskTypes,
      ...(report.error ? { warning: report.error } : {}),
    },
  };
}

async function readiness(context: RouteContext): Promise<HealthReport<Record<string, unknown>>> {
  const db = await controlPlaneHealth(context.client.store, { backlogThreshold: context.backlogThreshold, timeoutMs: 3000 });
  const worker = context.worker ? workerDocument(context) : null;
  const parts = [db, ...(worker ? [worker] : [])];
  const status = !context.started() ? 'DOWN' : worstStatus(parts) === 'DOWN' ? 'DOWN' : 'UP';
  return { status, details: { db, ...(worker ? { asyncTaskWorker: worker } : {}), started: context.started() } };
}

export function probeRoutes(options: { publicMetrics: boolean }): RouteSpec[] {
  const metricsAccess: Access = options.publicMetrics ? 'public' : 'operator';
  const probe = (url: string, summary: string, check: (context: RouteContext) => Promise<HealthReport<unknown>> | HealthReport<unknown>): RouteSpec => ({
    method: 'GET',
    url,
    access: 'public',
    identify: true,
    tags,
    summary: `${summary}. Details for an operator or admin credential (option healthDetails), else { status } only`,
    handler: async (request, reply, context) => send(request, reply, context, await check(context)),
  });
  return [
    probe('/actuator/health', 'Aggregate health: database, worker, process', async (context) => {
      const [ready, live] = [await readiness(context), liveness()];
      const components = { ...ready.details, liveness: live } as Record<string, unknown>;
      delete components.started;
      const reports = Object.values(components).filter((c): c is HealthReport<unknown> => typeof c === 'object' && c !== null && 'status' in c);
      return { status: context.started() ? worstStatus(reports) : 'DOWN', details: components };
    }),
    probe('/actuator/health/liveness', 'Liveness: the process and its event loop answer', () => liveness()),
    probe('/actuator/health/readiness', 'Readiness: database reachable, schema current, worker started', readiness),
    probe('/actuator/health/startup', 'Startup: migrated and worker started', async (context) => {
      const version = await context.client.store.schemaVersion().catch(() => null);
      const migrated = version === context.client.store.expectedSchemaVersion;
      const workerUp = !context.worker || context.worker.stats().state === 'running';
      const status = migrated && workerUp && context.started() ? 'UP' : 'DOWN';
      return { status, details: { schemaVersion: version, expectedSchemaVersion: context.client.store.expectedSchemaVersion, workerStarted: workerUp } };
    }),
    probe('/actuator/health/asyncTaskWorker', 'The worker: id, active tasks, max concurrency, utilization (DEGRADED above 90 %)', workerDocument),
    {
      method: 'GET',
      url: '/actuator/metrics',
      access: 'operator',
      tags,
      summary: 'Names of the metrics /actuator/metrics/<name> answers',
      handler: async (_request, _reply, context) => ({ names: metricNames(context) }),
    },
    {
      method: 'GET',
      url: '/actuator/metrics/:name',
      access: 'operator',
      tags,
      summary: 'One metric by dotted name (async.task.dead.letter.queue.size, …)',
      schema: { params: { type: 'object', required: ['name'], properties: { name: { type: 'string', pattern: '^[a-zA-Z][a-zA-Z0-9_.]{0,199}$' } } } },
      handler: async (request, _reply, context) => lookUpMetric(context, (request.params as { name: string }).name),
    },
    ...['/metrics', '/actuator/prometheus'].map((url): RouteSpec => ({
      method: 'GET',
      url,
      access: metricsAccess,
      tags,
      summary: 'Prometheus text exposition',
      async handler(_request, reply, context) {
        const registry = context.metrics.registry;
        return reply.type(registry.contentType).send(await registry.metrics());
      },
    })),
  ];
}

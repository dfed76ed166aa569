/**
 * One valid request per route, for the authorization matrix. Each builder
 * makes fresh fixtures (a task owned by alice in the state the route needs),
 * so every call can succeed. A route missing here fails the matrix test.
 */
import { randomUUID } from 'node:crypto';
import { ADMIN_PREFIX } from '../../src/server/admin-routes.js';
import { failedTask, type Running } from './harness.js';
import { waitFor } from '../helpers/wait.js';
import { Scope } from '../../src/core/scope.js';

export interface ExampleRequest {
  method: string;
  path: string;
  body?: unknown;
  /** An SSE stream that stays open: the test reads the status and hangs up. */
  stream?: boolean;
  headers?: Record<string, string>;
}

type Builder = (running: Running) => Promise<ExampleRequest>;

const A = ADMIN_PREFIX;
const HOUR = 3_600_000;

/** A task of alice's that waits an hour: pausable, cancellable, reschedulable. */
export async function aliceTask(running: Running): Promise<string> {
  return (await running.server.client.submit('test.idle', {}, { owner: 'alice', delayMs: HOUR })).task.id;
}

async function pausedTask(running: Running): Promise<string> {
  const id = await aliceTask(running);
  await running.server.client.pause(id);
  return id;
}

async function cancelledTask(running: Running): Promise<string> {
  const id = await aliceTask(running);
  await running.server.client.requestCancellation(id);
  return id;
}

/** A bulk action's request over one fresh task of alice's (by id; a user may not name an owner). */
function bulkOn(action: string, task: (running: Running) => Promise<string>, extra: Record<string, unknown> = {}): Builder {
  return async (r) => ({ method: 'POST', path: `/api/v1/bulk/${action}`, body: { filter: { ids: [await task(r)] }, ...extra } });
}

/** A bulk operation of alice's (pause one of her tasks), not run: it stays RUNNING until cancelled — or, `ended`, cancelled already. */
async function aliceBulk(running: Running, ended = false): Promise<string> {
  const bulk = running.server.client.bulk;
  const op = await bulk.start({ action: 'pause', filter: { ids: [await aliceTask(running)] } }, { scope: Scope.owner('alice'), run: false });
  if (ended) await bulk.cancel(op.id);
  return op.id;
}

/** A flow of alice's: two tasks, the second waiting for the first (an hour away). */
async function aliceFlow(running: Running): Promise<string> {
  const flow = await running.server.client.submitFlow({
    nodes: [
      { key: 'a', type: 'test.idle', payload: {}, owner: 'alice', delayMs: HOUR },
      { key: 'b', type: 'test.idle', payload: {}, owner: 'alice', dependsOn: ['a'] },
    ],
  });
  return flow.flowId;
}

/** A sequence of alice's: two tasks of one key, an hour away (the second waits for the first). */
async function aliceSequence(running: Running): Promise<string> {
  const key = `alice:${randomUUID()}`;
  for (let i = 0; i < 2; i += 1) await running.server.client.submit('test.idle', {}, { owner: 'alice', delayMs: HOUR, sequenceKey: key });
  return key;
}

/** A sequence of alice's whose head failed for good: its second task waits (BLOCK) until a skip or a SKIP policy. */
async function blockedSequence(running: Running): Promise<string> {
  const key = `alice:${randomUUID()}`;
  const head = await running.server.client.submit('test.fail', {}, { owner: 'alice', sequenceKey: key });
  await running.server.client.submit('test.idle', {}, { owner: 'alice', delayMs: HOUR, sequenceKey: key });
  await waitFor(async () => (await running.server.client.get(head.task.id))?.status === 'FAILED', `sequence head ${head.task.id} FAILED`);
  return key;
}

/** A flow of alice's whose first task failed for good (its child cancelled): retryable. */
async function failedFlow(running: Running): Promise<string> {
  const flow = await running.server.client.submitFlow({
    nodes: [
      { key: 'a', type: 'test.fail', payload: {}, owner: 'alice' },
      { key: 'b', type: 'test.idle', payload: {}, owner: 'alice', dependsOn: ['a'] },
    ],
  });
  await waitFor(async () => (await running.server.client.get(flow.tasks.b!.id))?.status === 'CANCELLED', 'the flow to fail');
  return flow.flowId;
}

/** A type of its own made adaptive (no worker serves it: nothing adapts it behind the test's back). */
async function adaptiveType(running: Running, overridden = false): Promise<string> {
  const type = `matrix.adaptive-${randomUUID()}`;
  await running.server.client.adaptive.set(type, { maxLimit: 8 });
  if (overridden) await running.server.client.adaptive.override(type, 3);
  return type;
}

/** A disabled yearly schedule: nothing it does can submit a task during the test. */
async function schedule(running: Running): Promise<string> {
  const key = `matrix-${randomUUID()}`;
  await running.server.client.schedules.save({ key, taskType: 'test.idle', cron: '0 0 1 1 *', enabled: false });
  return key;
}

const get =
  (path: string): Builder =>
  async () => ({ method: 'GET', path });

export const EXAMPLES: Record<string, Builder> = {
  'POST /api/v1/tasks': async () => ({ method: 'POST', path: '/api/v1/tasks', body: { type: 'test.idle', payload: { n: 1 }, delayMs: HOUR } }),
  'POST /api/v1/tasks/batch': async () => ({
    method: 'POST',
    path: '/api/v1/tasks/batch',
    body: { tasks: [{ type: 'test.idle', payload: {}, delayMs: HOUR }] },
  }),
  'GET /api/v1/tasks': get('/api/v1/tasks?limit=5'),
  'GET /api/v1/tasks/:id': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await aliceTask(r)}` }),
  'POST /api/v1/tasks/:id/cancel': async (r) => ({ method: 'POST', path: `/api/v1/tasks/${await aliceTask(r)}/cancel` }),
  'PATCH /api/v1/tasks/:id': async (r) => ({ method: 'PATCH', path: `/api/v1/tasks/${await aliceTask(r)}`, body: { priority: 5, payload: { n: 2 } } }),
  'POST /api/v1/tasks/:id/pause': async (r) => ({ method: 'POST', path: `/api/v1/tasks/${await aliceTask(r)}/pause` }),
  'POST /api/v1/tasks/:id/resume': async (r) => ({ method: 'POST', path: `/api/v1/tasks/${await pausedTask(r)}/resume` }),
  'GET /api/v1/tasks/:id/actions': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await pausedTask(r)}/actions` }),
  'GET /api/v1/tasks/:id/steps': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await aliceTask(r)}/steps?allCycles=true` }),
  'GET /api/v1/tasks/:id/logs': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await aliceTask(r)}/logs?attempt=1&limit=10` }),
  'GET /api/v1/tasks/:id/wait': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await cancelledTask(r)}/wait?timeoutMs=5000` }),
  'GET /api/v1/tasks/:id/events': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await cancelledTask(r)}/events` }),
  'GET /api/v1/events': async () => ({ method: 'GET', path: '/api/v1/events', stream: true }),
  'POST /api/v1/flows': async () => ({
    method: 'POST',
    path: '/api/v1/flows',
    body: {
      nodes: [
        { key: 'a', type: 'test.idle', payload: {}, delayMs: HOUR },
        { key: 'b', type: 'test.idle', payload: {}, dependsOn: ['a'] },
      ],
    },
  }),
  'GET /api/v1/flows/:id': async (r) => ({ method: 'GET', path: `/api/v1/flows/${await aliceFlow(r)}` }),
  'POST /api/v1/flows/:id/cancel': async (r) => ({ method: 'POST', path: `/api/v1/flows/${await aliceFlow(r)}/cancel` }),
  'POST /api/v1/flows/:id/pause': async (r) => ({ method: 'POST', path: `/api/v1/flows/${await aliceFlow(r)}/pause` }),
  'POST /api/v1/flows/:id/resume': async (r) => {
    const flowId = await aliceFlow(r);
    await r.server.client.pauseFlow(flowId);
    return { method: 'POST', path: `/api/v1/flows/${flowId}/resume` };
  },
  'POST /api/v1/flows/:id/retry': async (r) => ({ method: 'POST', path: `/api/v1/flows/${await failedFlow(r)}/retry` }),
  'GET /api/v1/sequences': get('/api/v1/sequences'),
  'GET /api/v1/tasks/counts': get('/api/v1/tasks/counts?type=test.idle'),
  'POST /api/v1/bulk/cancel': bulkOn('cancel', aliceTask),
  'POST /api/v1/bulk/pause': bulkOn('pause', aliceTask),
  'POST /api/v1/bulk/resume': bulkOn('resume', pausedTask),
  'POST /api/v1/bulk/retry': bulkOn('retry', async (r) => (await failedTask(r)).taskId),
  'POST /api/v1/bulk/replay': bulkOn('replay', async (r) => (await failedTask(r)).taskId),
  'POST /api/v1/bulk/reschedule': bulkOn('reschedule', aliceTask, { delayMs: 2 * HOUR }),
  'POST /api/v1/bulk/delete': bulkOn('delete', cancelledTask),
  'GET /api/v1/bulk': get('/api/v1/bulk'),
  'GET /api/v1/bulk/:id': async (r) => ({ method: 'GET', path: `/api/v1/bulk/${await aliceBulk(r)}` }),
  'GET /api/v1/bulk/:id/events': async (r) => ({ method: 'GET', path: `/api/v1/bulk/${await aliceBulk(r, true)}/events` }),
  'POST /api/v1/bulk/:id/cancel': async (r) => ({ method: 'POST', path: `/api/v1/bulk/${await aliceBulk(r)}/cancel` }),
  'GET /api/v1/sequences/:key': async (r) => ({ method: 'GET', path: `/api/v1/sequences/${await aliceSequence(r)}` }),
  'POST /api/v1/sequences/:key/skip': async (r) => ({ method: 'POST', path: `/api/v1/sequences/${await blockedSequence(r)}/skip` }),
  'PUT /api/v1/sequences/:key/policy': async (r) => ({
    method: 'PUT',
    path: `/api/v1/sequences/${await blockedSequence(r)}/policy`,
    body: { onDeadLetter: 'SKIP' },
  }),
  'GET /api/v1/tasks/:id/dependencies': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await aliceTask(r)}/dependencies` }),
  // A subscribed event: the publish creates a task (the fault suite's refusals check that a refused one creates none).
  'POST /api/v1/publish': async (r) => {
    await r.server.client.subscribe({ event: 'matrix.published', taskType: 'test.idle' });
    return { method: 'POST', path: '/api/v1/publish', body: { event: 'matrix.published', payload: { n: 1 }, delayMs: HOUR } };
  },
  [`GET ${A}/subscriptions`]: get(`${A}/subscriptions?event=matrix.event`),
  [`PUT ${A}/subscriptions`]: async () => ({ method: 'PUT', path: `${A}/subscriptions`, body: { event: 'matrix.event', taskType: 'test.idle', priority: 1 } }),
  [`DELETE ${A}/subscriptions`]: async (r) => {
    const taskType = `matrix.${randomUUID()}`;
    await r.server.client.subscribe({ event: 'matrix.event', taskType });
    return { method: 'DELETE', path: `${A}/subscriptions?event=matrix.event&taskType=${taskType}` };
  },

  [`POST ${A}/:id/pause`]: async (r) => ({ method: 'POST', path: `${A}/${await aliceTask(r)}/pause` }),
  [`POST ${A}/:id/resume`]: async (r) => ({ method: 'POST', path: `${A}/${await pausedTask(r)}/resume` }),
  [`POST ${A}/:id/retry`]: async (r) => ({ method: 'POST', path: `${A}/${(await failedTask(r)).taskId}/retry` }),
  [`POST ${A}/:id/cancel`]: async (r) => ({ method: 'POST', path: `${A}/${await aliceTask(r)}/cancel` }),
  [`POST ${A}/:id/reschedule`]: async (r) => ({ method: 'POST', path: `${A}/${await aliceTask(r)}/reschedule`, body: { delayMs: HOUR } }),
  [`GET ${A}/:id/diagnose`]: async (r) => ({ method: 'GET', path: `${A}/${await aliceTask(r)}/diagnose` }),
  [`POST ${A}/batch-cancel`]: async (r) => ({ method: 'POST', path: `${A}/batch-cancel`, body: [await aliceTask(r), randomUUID()] }),
  [`POST ${A}/cleanup`]: async () => ({ method: 'POST', path: `${A}/cleanup?retentionDays=30&batchSize=100` }),
  [`POST ${A}/policy/global/concurrency`]: async () => ({ method: 'POST', path: `${A}/policy/global/concurrency?maxConcurrency=50` }),
  [`GET ${A}/policies`]: get(`${A}/policies`),
  [`GET ${A}/policy/global`]: get(`${A}/policy/global`),
  [`PUT ${A}/policy/global`]: async () => ({ method: 'PUT', path: `${A}/policy/global`, body: { maxConcurrency: 50, enabled: true } }),
  [`DELETE ${A}/policy/global`]: async () => ({ method: 'DELETE', path: `${A}/policy/global` }),
  [`GET ${A}/policy/type/:taskType`]: get(`${A}/policy/type/test.idle`),
  [`PUT ${A}/policy/type/:taskType`]: async () => ({ method: 'PUT', path: `${A}/policy/type/test.idle`, body: { maxAttempts: 3 } }),
  [`DELETE ${A}/policy/type/:taskType`]: async () => ({ method: 'DELETE', path: `${A}/policy/type/test.idle` }),
  [`GET ${A}/policy/owner/:owner`]: get(`${A}/policy/owner/alice`),
  [`PUT ${A}/policy/owner/:owner`]: async () => ({ method: 'PUT', path: `${A}/policy/owner/alice`, body: { maxConcurrency: 3 } }),
  [`DELETE ${A}/policy/owner/:owner`]: async () => ({ method: 'DELETE', path: `${A}/policy/owner/alice` }),
  [`GET ${A}/policy/key/:rateKey`]: get(`${A}/policy/key/partner:*`),
  [`PUT ${A}/policy/key/:rateKey`]: async () => ({ method: 'PUT', path: `${A}/policy/key/partner:*`, body: { rateLimit: 100, ratePeriodMs: 60_000 } }),
  [`DELETE ${A}/policy/key/:rateKey`]: async () => ({ method: 'DELETE', path: `${A}/policy/key/partner:*` }),
  [`GET ${A}/analyze/:taskType`]: get(`${A}/analyze/test.fail?hours=1`),
  [`GET ${A}/dead-letters`]: get(`${A}/dead-letters?taskType=test.fail&limit=10`),
  [`GET ${A}/dead-letters/size`]: get(`${A}/dead-letters/size`),
  [`POST ${A}/dead-letters/:id/replay`]: async (r) => ({ method: 'POST', path: `${A}/dead-letters/${(await failedTask(r)).deadLetterId}/replay` }),
  [`POST ${A}/dead-letters/replay-batch`]: async (r) => ({
    method: 'POST',
    path: `${A}/dead-letters/replay-batch`,
    body: [(await failedTask(r)).deadLetterId],
  }),
  [`POST ${A}/dead-letters/archive`]: async (r) => ({ method: 'POST', path: `${A}/dead-letters/archive`, body: [(await failedTask(r)).deadLetterId] }),
  [`POST ${A}/dead-letters/clean`]: async () => ({ method: 'POST', path: `${A}/dead-letters/clean?retentionDays=30&batchSize=100` }),
  [`GET ${A}/workers`]: get(`${A}/workers`),
  [`GET ${A}/tokens`]: get(`${A}/tokens`),
  [`POST ${A}/tokens`]: async () => ({
    method: 'POST',
    path: `${A}/tokens`,
    body: { name: 'made by the matrix', role: 'user', owner: 'carol', expiresInDays: 1 },
  }),
  [`DELETE ${A}/tokens/:id`]: async (r) => ({
    method: 'DELETE',
    path: `${A}/tokens/${(await r.server.client.tokens.create({ name: 'to revoke', role: 'operator' })).record.id}`,
  }),
  [`GET ${A}/schedules`]: get(`${A}/schedules?nextRuns=2`),
  [`GET ${A}/schedules/:key`]: async (r) => ({ method: 'GET', path: `${A}/schedules/${await schedule(r)}` }),
  [`PUT ${A}/schedules/:key`]: async () => ({
    method: 'PUT',
    path: `${A}/schedules/matrix-${randomUUID()}`,
    body: { taskType: 'test.idle', cron: '0 3 * * *', timeZone: 'Europe/Paris', payload: {}, enabled: false },
  }),
  [`POST ${A}/schedules/:key/enable`]: async (r) => ({ method: 'POST', path: `${A}/schedules/${await schedule(r)}/enable` }),
  [`POST ${A}/schedules/:key/disable`]: async (r) => ({ method: 'POST', path: `${A}/schedules/${await schedule(r)}/disable` }),
  [`DELETE ${A}/schedules/:key`]: async (r) => ({ method: 'DELETE', path: `${A}/schedules/${await schedule(r)}` }),
  [`GET ${A}/adaptive`]: get(`${A}/adaptive`),
  [`GET ${A}/adaptive/:taskType`]: async (r) => ({ method: 'GET', path: `${A}/adaptive/${await adaptiveType(r)}` }),
  [`GET ${A}/adaptive/:taskType/history`]: async (r) => ({ method: 'GET', path: `${A}/adaptive/${await adaptiveType(r)}/history?limit=10` }),
  [`PUT ${A}/adaptive/:taskType`]: async () => ({
    method: 'PUT',
    path: `${A}/adaptive/matrix.adaptive-${randomUUID()}`,
    body: { minLimit: 2, maxLimit: 12, codes: ['HTTP_503'], failureThreshold: 0.25 },
  }),
  [`POST ${A}/adaptive/:taskType/off`]: async (r) => ({ method: 'POST', path: `${A}/adaptive/${await adaptiveType(r)}/off` }),
  [`POST ${A}/adaptive/:taskType/override`]: async (r) => ({
    method: 'POST',
    path: `${A}/adaptive/${await adaptiveType(r)}/override`,
    body: { limit: 2, overrideForMs: HOUR },
  }),
  [`POST ${A}/adaptive/:taskType/resume`]: async (r) => ({ method: 'POST', path: `${A}/adaptive/${await adaptiveType(r, true)}/resume` }),
  'GET /api/v1/tasks/:id/estimate': async (r) => ({ method: 'GET', path: `/api/v1/tasks/${await aliceTask(r)}/estimate` }),

  'GET /actuator/health': get('/actuator/health'),
  'GET /actuator/health/liveness': get('/actuator/health/liveness'),
  'GET /actuator/health/readiness': get('/actuator/health/readiness'),
  'GET /actuator/health/startup': get('/actuator/health/startup'),
  'GET /actuator/health/asyncTaskWorker': get('/actuator/health/asyncTaskWorker'),
  'GET /actuator/metrics': get('/actuator/metrics'),
  'GET /actuator/metrics/:name': get('/actuator/metrics/async.task.dead.letter.queue.size'),
  'GET /metrics': get('/metrics'),
  'GET /actuator/prometheus': get('/actuator/prometheus'),
  'GET /openapi.json': get('/openapi.json'),

  // The dashboard (src/server/ui-routes.ts): its files, its login session, the stats its overview polls.
  'GET /ui': get('/ui'),
  'GET /ui/*': get('/ui/index.html'),
  // Login and logout come from the dashboard's own origin (a browser sends Origin on them).
  'POST /api/v1/session': async (r) => ({ method: 'POST', path: '/api/v1/session', body: { token: r.tokens.operator }, headers: { origin: r.url } }),
  'GET /api/v1/session': get('/api/v1/session'),
  'DELETE /api/v1/session': async (r) => ({ method: 'DELETE', path: '/api/v1/session', headers: { origin: r.url } }),
  [`GET ${A}/stats`]: get(`${A}/stats`),
  [`GET ${A}/stats/history`]: get(`${A}/stats/history?range=24h`),
};

/** swagger-ui's own routes (all GET): their paths are the example, a wildcard asks for the page. */
export function exampleFor(method: string, url: string): Builder | undefined {
  const known = EXAMPLES[`${method} ${url}`];
  if (known) return known;
  if (method.split(',').includes('GET') && url.startsWith('/docs')) return get(url.replace('*', 'index.html'));
  return undefined;
}

/**
 * tasklease's HTTP server (issue 13), a thin layer over the client API:
 *
 *   const server = await createServer({ databaseUrl: 'sqlite:tasks.db', migrate: true, tasks, worker: true });
 *   const url = await server.listen();   // serving; the worker runs
 *   await server.close();                // stop accepting, drain, stop the worker, close the store
 *
 * startServer(options) does both steps. The CLI's `tasklease serve` and `start` call these.
 */
import type { FastifyInstance } from 'fastify';
import { createClient, type TaskLeaseClient } from '../client/client.js';
import { ErrorCode, PortInUseError } from '../core/errors.js';
import { createMetrics, type TaskleaseMetrics } from '../observe/metrics.js';
import { recordQueueHistory } from '../observe/queue-history.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { createWorker, type Worker } from '../worker/worker.js';
import { adminOpsRoutes } from './admin-ops-routes.js';
import { adminRoutes } from './admin-routes.js';
import { scheduleRoutes } from './schedule-routes.js';
import { limitRoutes } from './limit-routes.js';
import { eventRoutes } from './event-routes.js';
import { buildApp } from './app.js';
import { Authenticator, FailureLimiter } from './auth.js';
import { checkServerOptions, resolveSse, type ServerOptions } from './options.js';
import { probeRoutes } from './probe-routes.js';
import type { RouteContext } from './routes.js';
import { SseStreams } from './sse.js';
import { TaskEventHub } from './task-events.js';
import { dashboardRoutes } from './ui-routes.js';
import { userRoutes } from './user-routes.js';
import { flowRoutes } from './flow-routes.js';
import { sequenceRoutes } from './sequence-routes.js';
import { bulkRoutes } from './bulk-routes.js';
import { BulkResumer } from './bulk-resumer.js';

export type { ServerOptions, JwtOptions } from './options.js';
export type { Access, RouteSpec } from './routes.js';
export type { RouteRule } from './app.js';

export interface TaskleaseServer {
  readonly app: FastifyInstance;
  readonly client: TaskLeaseClient;
  readonly store: Store;
  /** The in-process worker (option `worker`), else null. */
  readonly worker: Worker | null;
  readonly metrics: TaskleaseMetrics;
  /** Starts listening (options host and port) and the worker; resolves to the base URL. */
  listen(): Promise<string>;
  /** Graceful: stop accepting, end streams, drain requests, stop the worker, close the store if the server opened it. Idempotent. */
  close(): Promise<void>;
}

export async function createServer(options: ServerOptions): Promise<TaskleaseServer> {
  checkServerOptions(options);
  const store = options.store ?? (await openStore(options.databaseUrl!));
  try {
    if (options.migrate) await store.migrate();
    return await assemble(options, store);
  } catch (error) {
    if (!options.store) await store.close().catch(() => undefined);
    throw error;
  }
}

export async function startServer(options: ServerOptions): Promise<TaskleaseServer & { url: string }> {
  const server = await createServer(options);
  try {
    return Object.assign(server, { url: await server.listen() });
  } catch (error) {
    await server.close();
    throw error;
  }
}

async function assemble(options: ServerOptions, store: Store): Promise<TaskleaseServer> {
  const tasks = options.tasks ?? [];
  const middleware = options.middleware ?? [];
  const client = createClient({ store, tasks, middleware, ...(options.maxPayloadBytes ? { maxPayloadBytes: options.maxPayloadBytes } : {}) });
  const worker = options.worker ? createWorker({ store, tasks, middleware, ...(typeof options.worker === 'object' ? options.worker : {}) }) : null;
  const metrics = createMetrics(options.registry ? { registry: options.registry } : {});
  const detach = [metrics.attachClient(client), metrics.attachStore(store), ...(worker ? [metrics.attachWorker(worker)] : [])];
  const events = new TaskEventHub();
  if (worker) events.attach(worker);
  // Queue history (the dashboard's charts): this process's submits and executions, one row per type per minute.
  const history = recordQueueHistory({ store, client, ...(worker ? { worker } : {}) });
  const sse = resolveSse(options.sse);
  const streams = new SseStreams(sse);
  let started = false;
  const context: RouteContext = {
    client,
    worker,
    metrics,
    events,
    sse,
    backlogThreshold: options.backlogThreshold ?? 1000,
    healthDetails: options.healthDetails ?? 'when-authorized',
    started: () => started,
  };
  const authenticator = new Authenticator(client.tokens, options.jwt);
  const limiter = new FailureLimiter(options.failedAuthLimit?.max ?? 20, options.failedAuthLimit?.windowMs ?? 60_000);
  const routes = [
    ...userRoutes(streams),
    ...flowRoutes(),
    ...sequenceRoutes(),
    ...bulkRoutes(streams),
    ...adminRoutes(),
    ...adminOpsRoutes(),
    ...scheduleRoutes(),
    ...limitRoutes(),
    ...eventRoutes(),
    ...probeRoutes({ publicMetrics: options.publicMetrics ?? false }),
    ...dashboardRoutes({ authenticator, limiter }),
  ];
  const app = await buildApp({ options, context, routes, authenticator, limiter });
  // Best effort: a database not reachable yet must not keep the server from starting.
  const payloadWarning = await client.payloadLimitWarning().catch(() => null);
  if (payloadWarning) app.log.warn({ errorCode: ErrorCode.PAYLOAD_TOO_LARGE }, payloadWarning);
  // Streams never end on their own while tasks run: end them first, or close() would wait for them.
  app.addHook('preClose', async () => streams.closeAll());

  // Bulk operations no live process holds (a crash, a restart): this server goes on with them.
  const resumer = new BulkResumer(client, options.bulkResumeIntervalMs ?? 5000, app.log);
  let closing: Promise<void> | null = null;
  return {
    app,
    client,
    store,
    worker,
    metrics,
    async listen() {
      const host = options.host ?? '127.0.0.1';
      const port = options.port ?? 8080;
      const url = await app.listen({ host, port }).catch((error: unknown) => {
        throw (error as { code?: unknown }).code === 'EADDRINUSE' ? new PortInUseError(host, port, undefined, { cause: error }) : error;
      });
      worker?.start();
      resumer.start();
      started = true;
      return url;
    },
    close() {
      closing ??= (async () => {
        started = false;
        await app.close();
        // Operations running here stop after their batch and are handed back: another server goes on at once.
        await resumer.stop();
        await worker?.stop();
        // Its last minute; a store without the history table (not migrated) loses it, and the close goes on.
        await history.stop().catch(() => undefined);
        for (const off of detach) off();
        events.close();
        if (!options.store) await store.close();
      })();
      return closing;
    },
  };
}

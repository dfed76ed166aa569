/**
 * Issue 24: the PostgreSQL store through a real PgBouncer the test starts
 * itself (test/helpers/pgbouncer.ts) — in session mode with the default
 * options, and in transaction mode with pooler: 'transaction' (wake-ups
 * through a direct listener). Each mode: 8 concurrent migrate() calls that
 * serialize and leave no lock behind, submit (alone, in a batch, in the
 * caller's transaction), claim, heartbeats, outcomes, cancellation, waitFor
 * and a worker draining tasks; and what a pooler refuses is reported as a
 * configuration error naming the parameter, never "unreachable".
 */
import pg from 'pg';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { cli } from '../cli/harness.js';
import { defineTask } from '../../src/core/definition.js';
import { ErrorCode } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { controlPlaneHealth } from '../../src/observe/health.js';
import { createMetrics } from '../../src/observe/metrics.js';
import { mapPgError } from '../../src/store/postgres/errors.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { PostgresStoreOptions } from '../../src/store/postgres/options.js';
import { createWorker } from '../../src/worker/worker.js';
import { describeOnServer } from '../helpers/factory.js';
import { startTestServer } from '../server/harness.js';
import { pgbouncerBinary, startPgBouncer, type PgBouncer, type PoolMode } from '../helpers/pgbouncer.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { claimParams, FAILURE, leaseOf, newTask } from './fixtures.js';

describe('PostgreSQL errors of a pooler', () => {
  const sqlError = (code: string, message: string, extra: object = {}): Error => Object.assign(new Error(message), { code, ...extra });

  it('maps named prepared statements lost through transaction pooling to STORE_CONFIGURATION naming pooler', () => {
    for (const error of [
      sqlError('26000', 'prepared statement "tasklease_ab12_claim" does not exist'),
      sqlError('42P05', 'prepared statement "tasklease_ab12_claim" already exists'),
    ]) {
      const mapped = mapPgError(error, 'claiming tasks');
      expect(mapped).toMatchObject({ code: ErrorCode.STORE_CONFIGURATION, setting: 'pooler' });
      expect(mapped.message).toContain("pooler: 'transaction'");
    }
  });

  it('does not word a catalog conflict (two sessions creating one object) as a task id submitted twice', () => {
    const mapped = mapPgError(
      sqlError('23505', 'duplicate key value violates unique constraint "pg_namespace_nspname_index"', { constraint: 'pg_namespace_nspname_index' }),
      'creating the schema',
    );
    expect(mapped.message).not.toMatch(/submitted twice/);
    expect(mapped.message).toMatch(/another session created the same object/);
  });
});

const FILE = 'test/store/postgres-pgbouncer.test.ts';
const G = Scope.global();
const found = (await postgresAvailable(FILE)) ? pgbouncerBinary(FILE) : null;
const available = found !== null;
const binary = found ?? '';
const LATEST = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;

const MODES: { mode: PoolMode; title: string; options: (schema: string) => PostgresStoreOptions }[] = [
  { mode: 'session', title: 'session mode, default options', options: (schema) => ({ schema }) },
  {
    mode: 'transaction',
    title: "transaction mode, pooler: 'transaction' with a direct listener",
    options: (schema) => ({ schema, pooler: 'transaction', listenConnectionString: PG_URL }),
  },
];

for (const { mode, title, options } of MODES) {
  describeOnServer(available, 'PostgreSQL and pgbouncer', `PostgreSQL through PgBouncer: ${title}`, () => {
    let bouncer: PgBouncer;
    let schema: TestSchema;
    const stores: PostgresStore[] = [];
    const open = (extra: PostgresStoreOptions = {}): PostgresStore => {
      const store = new PostgresStore({ connectionString: bouncer.url, poolSize: 3, ...options(schema.name), ...extra });
      stores.push(store);
      return store;
    };

    beforeAll(async () => {
      // Session pooling gives each client connection a server connection of its own: room for all of them.
      bouncer = await startPgBouncer(binary, mode, mode === 'session' ? 60 : 6);
      schema = await createTestSchema();
    });
    afterAll(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await schema?.drop();
      await bouncer?.stop();
    });

    it('runs 8 concurrent migrate() calls one after another and leaves no migration lock behind', async () => {
      const eight = Array.from({ length: 8 }, () => open({ poolSize: 1 }));
      const results = await Promise.allSettled(eight.map((store) => store.migrate()));
      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      expect(await eight[0]!.schemaVersion()).toBe(LATEST);
      const versions = await schema.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema.name}".tasklease_migrations`);
      expect(Number(versions[0]!.n)).toBe(PG_MIGRATIONS.length);
      // A session lock left on a pooled server connection would make this wait; it must not be held by anyone.
      const free = await schema.query<{ free: boolean }>(
        `SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS free, pg_advisory_unlock(hashtextextended($1, 0))`,
        [`tasklease.migrate:${schema.name}`],
      );
      expect(free[0]!.free).toBe(true);
      await Promise.all(eight.map((store) => store.migrate()));
      await Promise.all(eight.map((store) => store.close()));
    });

    it('submits, claims, heartbeats, writes outcomes and cancels', async () => {
      const store = open();
      await store.migrate();
      const [alone] = await store.insertTasks({ tasks: [newTask({ taskType: 'pgb' })] });
      const batch = await store.insertTasks({ tasks: [newTask({ taskType: 'pgb' }), newTask({ taskType: 'pgb', idempotencyKey: `k-${mode}` })] });
      expect([alone!.created, ...batch.map((result) => result.created)]).toEqual([true, true, true]);
      const claimed = await store.claimTasks(claimParams({ taskTypes: ['pgb'], limit: 3 }));
      expect(claimed).toHaveLength(3);
      const leases = claimed.map((task) => leaseOf(task));
      const renewed = await store.renewLeases({ leases, leaseMs: 30_000 });
      expect(renewed.lost).toEqual([]);
      expect(await store.saveProgress({ lease: leases[0]!, progress: { total: 2, processed: 1, succeeded: 1, failed: 0, skipped: 0, message: 'half' } })).toBe(
        true,
      );
      const [cancel] = await store.changeStatus({ ids: [claimed[2]!.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      expect(cancel).toMatchObject({ applied: true, status: 'CANCEL_REQUESTED' });
      const finished = await store.finishAttempts({
        outcomes: [
          { kind: 'SUCCESS', lease: leases[0]!, artifactId: null, resultJson: '{"ok":true}', progress: null },
          { kind: 'RETRY', lease: leases[1]!, failure: FAILURE, retryDelayMs: 0, progress: null },
          { kind: 'CANCELLED', lease: leases[2]!, progress: null },
        ],
      });
      expect(finished.applied).toEqual([true, true, true]);
      const statuses = await Promise.all(claimed.map(async (task) => (await store.getTask({ id: task.id, scope: G }))?.status));
      expect(statuses).toEqual(['SUCCESS', 'RETRY_WAIT', 'CANCELLED']);
    });

    it("submits inside the caller's transaction: invisible until COMMIT, gone after ROLLBACK", async () => {
      const store = open();
      await store.migrate();
      const pool = new pg.Pool({ connectionString: bouncer.url, max: 1 });
      try {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const [kept] = await store.insertTasks({ tasks: [newTask({ taskType: 'pgb-tx' })], transaction: client });
          expect(await store.getTask({ id: kept!.task.id, scope: G })).toBeNull();
          await client.query('COMMIT');
          expect((await store.getTask({ id: kept!.task.id, scope: G }))?.status).toBe('QUEUED');
          await client.query('BEGIN');
          const [dropped] = await store.insertTasks({ tasks: [newTask({ taskType: 'pgb-tx' })], transaction: client });
          await client.query('ROLLBACK');
          expect(await store.getTask({ id: dropped!.task.id, scope: G })).toBeNull();
        } finally {
          client.release();
        }
      } finally {
        await pool.end();
      }
    });

    it('a worker drains tasks, hears submits and cancellations, and waitFor resolves on the outcome', async () => {
      const store = open();
      await store.migrate();
      const started = new Set<string>();
      const quick = defineTask({ type: `pgb-drain-${mode}`, execute: () => ({ status: 'SUCCESS', result: { ok: true } }) });
      const slow = defineTask({
        type: `pgb-slow-${mode}`,
        execute: (ctx) =>
          new Promise((_, reject) => {
            started.add(ctx.task.id);
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
          }),
      });
      const client = createClient({ store, tasks: [quick, slow] });
      // Polls are rare here: the worker must be woken by NOTIFY (heard through the listener) to be quick.
      const worker = createWorker({ store, tasks: [quick, slow], ...FAST_WORKER, pollIntervalMs: 60_000, concurrency: 8 });
      worker.start();
      try {
        // The listener's self-probe came back: wake-ups are heard (a direct listener in transaction mode).
        await waitFor(() => store.wakeups === 'listening', 'the wake-up probe to come back');
        expect(await controlPlaneHealth(store)).toMatchObject({ status: 'UP', details: { wakeups: 'listening' } });
        const submitted = await client.submitMany(Array.from({ length: 40 }, (_, n) => ({ type: quick.type, payload: { n } })));
        const last = await client.waitFor(submitted.at(-1)!.task.id, { timeoutMs: 20_000, maxPollMs: 60_000 });
        expect(last.status).toBe('SUCCESS');
        await waitFor(async () => (await store.countByStatus({ scope: G, taskType: quick.type })).SUCCESS === 40, 'all 40 drained', 20_000);
        const { task } = await client.submit(slow, {});
        await waitFor(() => started.has(task.id), 'the slow task to start', 20_000);
        expect(await client.requestCancellation(task.id)).toBe('CANCEL_REQUESTED');
        const ended = await client.waitFor(task.id, { timeoutMs: 20_000, maxPollMs: 60_000 });
        expect(ended.status).toBe('CANCELLED');
      } finally {
        await worker.stop();
      }
    });

    it('the HTTP server behind the dashboard: login, submit, wait, list, health and metrics through the pooler', async () => {
      const store = open();
      await store.migrate();
      const running = await startTestServer(store);
      try {
        const login = await running.call('POST', '/api/v1/session', { body: { token: running.tokens.admin }, headers: { origin: running.url } });
        expect(login.status).toBe(200);
        const submitted = await running.call('POST', '/api/v1/tasks', { as: 'admin', body: { type: 'test.idle', payload: { via: mode } } });
        expect(submitted.status).toBe(202);
        const id = (submitted.body as { task: { id: string } }).task.id;
        const waited = await running.call('GET', `/api/v1/tasks/${id}/wait?timeoutMs=20000`, { as: 'admin' });
        expect(waited.body).toMatchObject({ finished: true, task: { id, status: 'SUCCESS' } });
        const listed = await running.call('GET', '/api/v1/tasks?type=test.idle', { as: 'operator' });
        expect(JSON.stringify(listed.body)).toContain(id);
        expect((await running.call('GET', '/actuator/health', { as: 'admin' })).body).toMatchObject({ status: 'UP' });
        expect((await running.call('GET', '/actuator/metrics', { as: 'admin' })).status).toBe(200);
        expect((await running.call('GET', '/ui')).status).toBe(200);
      } finally {
        await running.close();
      }
    });
  });
}

describeOnServer(available, 'PostgreSQL and pgbouncer', 'PostgreSQL through PgBouncer in transaction mode: wake-ups never fail silently', () => {
  let bouncer: PgBouncer;
  let schema: TestSchema;
  beforeAll(async () => {
    bouncer = await startPgBouncer(binary, 'transaction', 4);
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await schema?.drop();
    await bouncer?.stop();
  });

  const drains = async (store: PostgresStore, type: string): Promise<void> => {
    const task = defineTask({ type, execute: () => undefined });
    const client = createClient({ store, tasks: [task] });
    // The worker's own poll is too rare to matter: what wakes it is the store.
    const worker = createWorker({ store, tasks: [task], ...FAST_WORKER, pollIntervalMs: 60_000 });
    worker.start();
    try {
      const submitted = await client.submitMany(Array.from({ length: 10 }, () => ({ type, payload: {} })));
      // maxPollMs beyond the timeout: only a wake-up ends this wait.
      const last = await client.waitFor(submitted.at(-1)!.task.id, { timeoutMs: 15_000, minPollMs: 60_000, maxPollMs: 60_000 });
      expect(last.status).toBe('SUCCESS');
      await waitFor(async () => (await store.countByStatus({ scope: G, taskType: type })).SUCCESS === 10, `all of ${type} drained`, 15_000);
    } finally {
      await worker.stop();
    }
  };

  it('a listener behind the transaction pooler is found deaf by its probe, says so once, and wakes workers and waiters on a short timer', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      if ((warning as { code?: string }).code === 'TASKLEASE_WAKEUPS_DEAF') warnings.push(warning);
    };
    process.on('warning', onWarning);
    const store = new PostgresStore({ connectionString: bouncer.url, schema: schema.name, poolSize: 3, pooler: 'transaction' });
    try {
      await store.migrate();
      let wakes = 0;
      const off = store.subscribe((event) => {
        if (event.kind === 'submitted' && event.taskTypes.length === 0 && store.wakeups === 'deaf') wakes += 1;
      });
      await waitFor(() => store.wakeups === 'deaf', 'the probe to be missed', 15_000);
      let waiterWakes = 0;
      const unwatch = await store.watchOutcome({ taskId: 'none', listener: () => (waiterWakes += 1) });
      // Nothing is submitted or finished: these wake-ups are the short poll that stands in for NOTIFY.
      await waitFor(() => wakes >= 3 && waiterWakes >= 3, 'the short poll of a deaf listener', 10_000);
      off();
      await unwatch();
      await waitFor(() => warnings.length > 0, 'the warning');
      expect(warnings[0]!.message).toMatch(/listenConnectionString.*pollOnly/);
      const registry = new Registry();
      createMetrics({ registry }).attachStore(store);
      expect(await registry.metrics()).toMatch(/^async_task_wakeups_deaf 1$/m);
      const health = await controlPlaneHealth(store);
      expect(health).toMatchObject({ status: 'DEGRADED', details: { wakeups: 'deaf' } });
      expect(health.error).toMatch(/listenConnectionString/);
      await drains(store, 'pgb-deaf');
      expect(warnings).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
      await store.close();
    }
  });

  it('the CLI migrates, submits, reads and cancels through the pooler with --pooler transaction (or TASKLEASE_POOLER)', async () => {
    const env = { TASKLEASE_DATABASE_URL: `${bouncer.url}?schema=${schema.name}`, TASKLEASE_POOLER: 'transaction' };
    const migrated = await cli(['--pooler', 'transaction', 'migrate', '--json'], { env: { TASKLEASE_DATABASE_URL: env.TASKLEASE_DATABASE_URL } });
    expect(migrated.code, migrated.stderr).toBe(0);
    const submitted = await cli(['submit', 'pgb.cli', '{"n":1}', '--json'], { env });
    expect(submitted.code, submitted.stderr).toBe(0);
    const { id } = submitted.json<{ id: string }>();
    expect((await cli(['get', id, '--json'], { env })).json<{ status: string }>().status).toBe('QUEUED');
    const cancelled = await cli(['cancel', id, '--json'], { env });
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect((await cli(['get', id, '--json'], { env })).json<{ status: string }>().status).toBe('CANCELLED');
  });

  it('pollOnly opens no LISTEN connection and still drains (this process hears its own submits)', async () => {
    const store = new PostgresStore({ connectionString: bouncer.url, schema: schema.name, poolSize: 3, pooler: 'transaction', pollOnly: true });
    try {
      await store.migrate();
      expect(store.wakeups).toBe('pollOnly');
      await drains(store, 'pgb-poll-only');
      expect(store.listening).toBe(false);
      const listeners = await schema.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1`, [
        `tasklease:listen:${schema.name}`,
      ]);
      expect(Number(listeners[0]!.n)).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describeOnServer(available, 'PostgreSQL and pgbouncer', 'PostgreSQL through PgBouncer: what the pooler refuses', () => {
  let bouncer: PgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer(binary, 'session', 2);
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it('sends no statement_timeout in the startup packet (the default store connects)', async () => {
    const store = new PostgresStore({ connectionString: bouncer.url, poolSize: 1, statementTimeoutMs: 1234 });
    try {
      const rows = await store.pool.query<{ t: string }>("SELECT current_setting('statement_timeout') AS t");
      expect(rows.rows[0]!.t).toBe('1234ms');
    } finally {
      await store.close();
    }
  });

  it('reports a startup parameter the pooler refuses as STORE_CONFIGURATION naming it, not as unreachable', async () => {
    const pool = new pg.Pool({ connectionString: bouncer.url, max: 1, statement_timeout: 5000 });
    pool.on('error', () => undefined);
    const store = new PostgresStore({ pool });
    try {
      const error = await store.now().then(
        () => null,
        (e: unknown) => e as Error & { code?: string; setting?: string },
      );
      expect(error).toMatchObject({ code: ErrorCode.STORE_CONFIGURATION, setting: 'statement_timeout' });
      expect(error!.message).toMatch(/statement_timeout.*ignore_startup_parameters/);
      expect(error!.message).not.toMatch(/unreachable/);
    } finally {
      await store.close();
      await pool.end();
    }
  });
});

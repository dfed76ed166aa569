/**
 * The seed's dashboard and alerts against the real thing: a Prometheus server
 * scrapes the running tasklease server (startServer, public /metrics, its
 * in-process worker) while the worker drains a scripted workload on SQLite (a
 * PostgreSQL store is attached to the server's metrics too, for the pool
 * gauges SQLite does not have). Every dashboard query and every alert
 * expression is then evaluated through the Prometheus HTTP API: each must
 * return data, each alert rule must evaluate without error.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { TaskFailure } from '../../src/core/errors.js';
import { startServer, type TaskleaseServer } from '../../src/server/index.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { FAST } from '../observe/suite.js';
import { startPrometheus, type QueryResult, type RunningPrometheus } from './prometheus-server.js';
import { describeWithTools, PROMETHEUS, systemTool } from '../helpers/system-tools.js';
import { ALERT_NAMES, ALERT_RULES, DASHBOARD, dashboardQueries } from './tools.js';

const ok = defineTask<{ partial?: boolean }>({ type: 'e2e.ok', execute: (_ctx, p) => (p.partial ? TaskResult.partial() : undefined) });
const flaky = defineTask({
  type: 'e2e.flaky',
  execute: (ctx) => {
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  },
});
const doomed = defineTask({
  type: 'e2e.doomed',
  maxAttempts: 2,
  execute: () => {
    throw new TaskFailure('upstream down', { code: 'UPSTREAM_DOWN' });
  },
});
/** Runs across several heartbeats, so leases are renewed and slots are busy when Prometheus looks. */
const slow = defineTask({
  type: 'e2e.slow',
  execute: (ctx) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 300);
      ctx.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    }),
});
const TASKS = [ok, flaky, doomed, slow];

/** A finite number: NaN (0/0 with no traffic) or a missing series is no data. */
function hasData(result: QueryResult): boolean {
  return result.status === 'success' && (result.data?.result ?? []).some((sample) => Number.isFinite(Number(sample.value[1])));
}

/** An alert expression without its final threshold: the signal the alert watches. */
function signalOf(query: string): string {
  const match = /^([\s\S]*\S)\s*(?:>|<|>=|<=)\s*[-+\d.e]+$/.exec(query.trim());
  if (!match) throw new Error(`alert expression does not end in a threshold comparison: ${query}`);
  return match[1]!;
}

interface RulesAnswer {
  data: { groups: { rules: { type: string; name: string; query: string; health: string; lastError?: string; lastEvaluation: string }[] }[] };
}

const pgAvailable = await postgresAvailable('test/deploy/prometheus.test.ts');

const prometheusBinary = systemTool(PROMETHEUS, 'test/deploy/prometheus.test.ts');

describeWithTools([prometheusBinary], 'prometheus', 'Prometheus', () =>
  describeOnServer(pgAvailable, 'PostgreSQL (for the pool gauges)', 'a real Prometheus over a running worker', () => {
    let dir: string;
    let sqlite: SqliteStore;
    let schema: TestSchema;
    let pg: PostgresStore;
    let server: (TaskleaseServer & { url: string }) | undefined;
    let detachPg: (() => void) | undefined;
    let prometheus: RunningPrometheus | undefined;
    let producer: NodeJS.Timeout | undefined;

    beforeAll(async () => {
      const binary = prometheusBinary!;
      dir = mkdtempSync(join(tmpdir(), 'tasklease-e2e-'));
      sqlite = new SqliteStore({ path: join(dir, 'tasks.db') });
      await sqlite.migrate();
      schema = await createTestSchema();
      pg = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 4 });
      await pg.migrate();

      // The real server: its client, its worker (started by listen) and its /metrics, open to the scraper.
      const running = await startServer({
        store: sqlite,
        tasks: TASKS,
        worker: { ...FAST, concurrency: 4 },
        port: 0,
        publicMetrics: true,
        logger: false,
      });
      server = running;
      detachPg = running.metrics.attachStore(pg);
      const { client } = running;
      // The scripted workload, a wave every 250 ms until the checks are done, so every rate has traffic in its window.
      const wave = (): void =>
        void client
          .submitMany([
            { type: ok.type, payload: {} },
            { type: ok.type, payload: { partial: true } },
            { type: flaky.type, payload: {} },
            { type: doomed.type, payload: {} },
            { type: slow.type, payload: {} },
            { type: slow.type, payload: {} },
          ])
          .catch(() => undefined);
      wave();
      producer = setInterval(wave, 250);
      prometheus = await startPrometheus({ binary, target: new URL(running.url).host, ruleFiles: [ALERT_RULES] });
    }, 120_000);

    afterAll(async () => {
      if (producer) clearInterval(producer);
      await prometheus?.stop();
      await server?.close();
      detachPg?.();
      await pg?.close();
      await schema?.drop();
      await sqlite?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    /** Polls Prometheus until every query has data; on timeout names the ones that never had. */
    async function expectData(queries: { name: string; expr: string }[]): Promise<void> {
      let missing = queries;
      try {
        await waitFor(
          async () => {
            const answers = await Promise.all(missing.map(async (q) => ({ q, result: await prometheus!.query(q.expr) })));
            for (const { q, result } of answers) expect(result.status, `${q.name}: ${result.error ?? ''}`).toBe('success');
            missing = answers.filter((a) => !hasData(a.result)).map((a) => a.q);
            return missing.length === 0;
          },
          'every query to return data',
          90_000,
          500,
        );
      } catch (error) {
        throw new Error(`${(error as Error).message}; still without data: ${missing.map((q) => `${q.name} [${q.expr}]`).join('; ')}`);
      }
    }

    it('evaluates every dashboard query with data', async () => {
      const queries = dashboardQueries(readFileSync(DASHBOARD, 'utf8')).map((q) => ({ name: q.panel, expr: q.expr }));
      expect(queries.length).toBe(22);
      // The target is the tasklease server itself: its probes answer next to the /metrics Prometheus scrapes.
      expect((await fetch(`${server!.url}/actuator/health/liveness`)).status).toBe(200);
      await expectData([...queries, { name: 'scrape target up', expr: 'up{job="tasklease"} == 1' }]);
    }, 120_000);

    it('loads the seven alert rules, evaluates them without error, and each one watches a signal with data', async () => {
      const loaded = async () => (await prometheus!.api<RulesAnswer>('/api/v1/rules')).data.groups.flatMap((g) => g.rules).filter((r) => r.type === 'alerting');
      expect((await loaded()).map((r) => r.name)).toEqual(ALERT_NAMES);
      const evaluated = await waitFor(
        async () => {
          const rules = await loaded();
          return rules.every((r) => !r.lastEvaluation.startsWith('0001-')) ? rules : null;
        },
        'every alert rule to be evaluated',
        60_000,
        200,
      );
      for (const rule of evaluated)
        expect({ name: rule.name, health: rule.health, error: rule.lastError ?? '' }).toEqual({ name: rule.name, health: 'ok', error: '' });
      for (const rule of evaluated) expect((await prometheus!.query(rule.query)).status, rule.name).toBe('success');
      await expectData(evaluated.map((rule) => ({ name: rule.name, expr: signalOf(rule.query) })));
    }, 120_000);
  }),
);

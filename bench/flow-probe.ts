/**
 * Flows at scale (issue 26): a flow of N+2 nodes — one root, N parts waiting
 * for it (fan-out), one join waiting for all N (fan-in) — submitted in one
 * call and drained by one worker, against the same N+2 tasks without edges
 * (submitMany, drained by the same worker), on each store, in interleaved
 * rounds (flow, plain, then plain, flow, …). Reports the submit time and the
 * drain rate of each and their ratio, the medians over rounds; and on
 * PostgreSQL the plans of the release path's statements on the drained flow
 * (the edge probe by parent, the settle's edge update, the child lock):
 * index scans only, no per-node scan.
 * Run: npx tsx bench/flow-probe.ts [N=10000] [rounds=2] [stores=sqlite,postgres,mysql]
 * Environment: CONCURRENCY (20).
 */
import pg from 'pg';
import { createClient, createWorker, defineTask, Scope } from '../src/index.js';
import type { Store } from '../src/store/types.js';
import { PG_URL } from './config.js';
import { createNamespace, dropNamespace, storeSpec, type Dialect, type StoreSpec } from './systems/tasklease-stores.js';

const n = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 2);
const stores = (process.argv[4] ?? 'sqlite,postgres,mysql').split(',') as Dialect[];
const concurrency = Number(process.env.CONCURRENCY ?? 20);
const TYPE = 'flow.noop';
const task = defineTask({ type: TYPE, execute: () => undefined });

async function open(spec: StoreSpec): Promise<Store> {
  switch (spec.dialect) {
    case 'postgres': {
      const { PostgresStore } = await import('../src/postgres.js');
      return new PostgresStore({ connectionString: spec.connectionString, schema: spec.schema });
    }
    case 'sqlite': {
      const { SqliteStore } = await import('../src/sqlite.js');
      return new SqliteStore({ path: spec.path });
    }
    case 'mysql': {
      const { MysqlStore } = await import('../src/mysql.js');
      return new MysqlStore({ uri: spec.uri });
    }
  }
}

interface Round {
  submitMs: number;
  drainMs: number;
}

async function drain(store: Store, total: number): Promise<number> {
  let done = 0;
  let resolve!: () => void;
  const finished = new Promise<void>((r) => (resolve = r));
  const worker = createWorker({
    store,
    tasks: [task],
    concurrency,
    globalConcurrency: 10_000,
    typeConcurrency: 10_000,
    pollIntervalMs: 50,
    logger: false,
  });
  worker.on('completed', () => void (++done === total && resolve()));
  const started = performance.now();
  await worker.start();
  await finished;
  const ms = performance.now() - started;
  await worker.stop();
  return ms;
}

async function round(dialect: Dialect, withEdges: boolean): Promise<Round & { plans?: string[] }> {
  const spec = storeSpec(dialect);
  await createNamespace(spec);
  const store = await open(spec);
  try {
    await store.migrate();
    const client = createClient({ store, tasks: [task] });
    const started = performance.now();
    if (withEdges) {
      const parts = Array.from({ length: n }, (_, i) => ({ key: `part${i}`, type: TYPE, payload: { i }, dependsOn: ['root'] }));
      await client.submitFlow({
        nodes: [{ key: 'root', type: TYPE, payload: {} }, ...parts, { key: 'join', type: TYPE, payload: {}, dependsOn: parts.map((p) => p.key) }],
      });
    } else {
      await client.submitMany(Array.from({ length: n + 2 }, (_, i) => ({ type: TYPE, payload: { i } })));
    }
    const submitMs = performance.now() - started;
    const drainMs = await drain(store, n + 2);
    const counts = await store.countByStatus({ scope: Scope.global() });
    if (counts.SUCCESS !== n + 2) throw new Error(`${dialect}: ${counts.SUCCESS} of ${n + 2} succeeded`);
    const plans = withEdges && spec.dialect === 'postgres' ? await releasePlans(spec.schema) : undefined;
    return { submitMs, drainMs, ...(plans ? { plans } : {}) };
  } finally {
    await store.close();
    await dropNamespace(spec);
  }
}

/** EXPLAIN of the release path's statements (postgres/flows.ts, finish.ts) with a real parent and child of the drained flow. */
async function releasePlans(schema: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`ANALYZE ${schema}.system_async_task, ${schema}.system_async_task_dependency`);
    const edge = (await client.query(`SELECT parent_id, child_id FROM ${schema}.system_async_task_dependency LIMIT 1 OFFSET 5000`)).rows[0];
    const plan = async (sql: string, values: unknown[]) =>
      (await client.query(`EXPLAIN ${sql}`, values)).rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
    const ids = [[edge.parent_id], [edge.child_id]];
    return [
      await plan(`SELECT 1 FROM ${schema}.system_async_task_dependency d WHERE d.parent_id = ANY ($1::uuid[]) AND d.resolved IS NULL`, [ids[0]]),
      await plan(
        `UPDATE ${schema}.system_async_task_dependency d SET resolved = 'SUCCEEDED' FROM ${schema}.system_async_task p
         WHERE d.parent_id = ANY ($1::uuid[]) AND d.resolved IS NULL AND p.id = d.parent_id`,
        [ids[0]],
      ),
      await plan(`SELECT c.id FROM ${schema}.system_async_task c WHERE c.id = ANY ($1::uuid[]) ORDER BY c.id FOR UPDATE`, [ids[1]]),
    ];
  } finally {
    await client.end();
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const dialect of stores) {
  const flow: Round[] = [];
  const plain: Round[] = [];
  let plans: string[] | undefined;
  for (let r = 0; r < rounds; r += 1) {
    const order = r % 2 === 0 ? [true, false] : [false, true];
    for (const withEdges of order) {
      const result = await round(dialect, withEdges);
      (withEdges ? flow : plain).push(result);
      plans ??= result.plans;
      console.log(
        `${dialect} round ${r + 1} ${withEdges ? 'flow ' : 'plain'}: submit ${result.submitMs.toFixed(0)} ms, drain ${result.drainMs.toFixed(0)} ms (${(((n + 2) / result.drainMs) * 1000).toFixed(0)}/s)`,
      );
    }
  }
  const rate = (rs: Round[]) => ((n + 2) / median(rs.map((x) => x.drainMs))) * 1000;
  console.log(
    `${dialect}: ${n + 2} tasks — submit flow ${median(flow.map((x) => x.submitMs)).toFixed(0)} ms vs plain ${median(plain.map((x) => x.submitMs)).toFixed(0)} ms; ` +
      `drain flow ${rate(flow).toFixed(0)}/s vs plain ${rate(plain).toFixed(0)}/s (${(rate(flow) / rate(plain)).toFixed(2)}×)`,
  );
  if (plans) for (const p of plans) console.log(`${dialect} plan:\n${p}`);
}

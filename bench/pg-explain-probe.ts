/**
 * PostgreSQL time of one claim and one outcome write of 250 rows, from the
 * server's own plans (auto_explain with ANALYZE, nested statements included).
 * Run: npx tsx bench/pg-explain-probe.ts
 */
import pg from 'pg';
import { createClient, defineTask } from '../src/index.js';
import { PostgresStore } from '../src/postgres.js';
const schema = `probe_${process.pid}`;
const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', max: 2 });
pool.on('connect', (c) => {
  void c.query(
    "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_nested_statements = on; SET client_min_messages = log; SET auto_explain.log_level = notice",
  );
  c.on('notice', (n) => console.log(n.message));
});
const store = new PostgresStore({ pool, schema });
await store.migrate();
const t = defineTask({ type: 'noop' });
const client = createClient({ store, tasks: [t] });
await client.submitMany(Array.from({ length: 250 }, () => ({ type: 'noop', payload: {} })));
console.log('=== CLAIM');
const tasks = await store.claimTasks({ workerId: 'w', taskTypes: ['noop'], limit: 250, leaseMs: 60000, globalConcurrency: 1e6, typeConcurrency: 1e6 });
console.log('=== FINISH');
await store.finishAttempts({
  outcomes: tasks.map((task) => ({
    kind: 'SUCCESS',
    lease: { taskId: task.id, workerId: 'w', attempt: task.attemptCount, token: task.leaseToken ?? '' },
    artifactId: null,
    resultJson: null,
    progress: null,
  })),
});
await store.close();
await pool.end();
const c = new pg.Client('postgres://postgres@127.0.0.1:5432/test');
await c.connect();
await c.query(`DROP SCHEMA ${schema} CASCADE`);
await c.end();

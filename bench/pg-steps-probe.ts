/**
 * PostgreSQL, one task at a time: the median round trip of each step of a
 * pickup and its end (client.submit, the store's insert alone, a claim, an
 * outcome write) against SELECT 1. What a step costs beyond SELECT 1 is the
 * server's work, planning included.
 * Run: npx tsx bench/pg-steps-probe.ts [rounds=300]
 * PGOPTIONS='-c plan_cache_mode=force_generic_plan' (read by pg) shows what planning costs.
 */
import pg from 'pg';
import { uuidv7 } from '../src/core/ids.js';
import type { Task } from '../src/core/task.js';
import { createClient, defineTask } from '../src/index.js';
import { PostgresStore } from '../src/postgres.js';

const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `probe_steps_${process.pid}`;
const rounds = Number(process.argv[2] ?? 300);
const store = new PostgresStore({ connectionString: url, schema, poolSize: 2 });
const admin = new pg.Client(url);
await admin.connect();
try {
  await store.migrate();
  const task = defineTask({ type: 'ping', execute: () => undefined });
  const client = createClient({ store, tasks: [task] });
  const newTask = () => ({
    id: uuidv7(),
    taskType: 'ping',
    payloadJson: '{}',
    priority: 0,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts: 3,
    owner: null,
    idempotencyKey: null,
    traceId: null,
  });
  const params = { workerId: 'w', taskTypes: ['ping'], limit: 500, leaseMs: 60_000, globalConcurrency: 20, typeConcurrency: 5, liveWithinMs: 30_000 };
  const steps = {
    'client.submit': [] as number[],
    'store insert': [] as number[],
    'claim (2 tasks)': [] as number[],
    'outcomes (2)': [] as number[],
    'SELECT 1': [] as number[],
  };
  const time = async (into: number[], work: () => Promise<unknown>): Promise<void> => {
    const started = performance.now();
    await work();
    into.push(performance.now() - started);
  };
  for (let i = 0; i < rounds; i++) {
    await time(steps['client.submit'], () => client.submit('ping', {}));
    await time(steps['store insert'], () => store.insertTasks({ tasks: [newTask()] }));
    let claimed: Task[] = [];
    await time(steps['claim (2 tasks)'], async () => {
      claimed = await store.claimTasks(params);
    });
    await time(steps['outcomes (2)'], () =>
      store.finishAttempts({
        outcomes: claimed.map((t) => ({
          kind: 'SUCCESS',
          lease: { taskId: t.id, workerId: 'w', attempt: t.attemptCount, token: t.leaseToken ?? '' },
          artifactId: null,
          resultJson: null,
          progress: null,
        })),
      }),
    );
    await time(steps['SELECT 1'], () => admin.query('SELECT 1'));
  }
  console.log(`median ms over ${rounds} rounds`);
  for (const [name, xs] of Object.entries(steps)) {
    xs.sort((a, b) => a - b);
    console.log(`${name.padEnd(18)} ${xs[Math.floor(xs.length / 2)]!.toFixed(3)}`);
  }
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}

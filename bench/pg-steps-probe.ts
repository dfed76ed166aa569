/**
 * PostgreSQL round trips, step by step, through the store contract (no
 * worker), each against SELECT 1: what a step costs beyond SELECT 1 is the
 * server's work, planning and commit included.
 * - One task at a time (a pickup and its end): client.submit, the store's
 *   insert alone, a claim, an outcome write.
 * - Under a binding type limit: outcomes + the next claim in one statement
 *   (finishAndClaim), then each alone. A worker's rate there is the limit
 *   divided by that round trip.
 * Run: npx tsx bench/pg-steps-probe.ts [rounds=300] [typeLimit=5]
 * PGOPTIONS (read by pg): '-c synchronous_commit=off' shows what the commits'
 * WAL flushes cost, '-c plan_cache_mode=force_generic_plan' what planning costs.
 */
import pg from 'pg';
import { uuidv7 } from '../src/core/ids.js';
import { leaseOf, type Task } from '../src/core/task.js';
import { createClient, defineTask } from '../src/index.js';
import { PostgresStore } from '../src/postgres.js';
import type { AttemptOutcome } from '../src/store/types.js';

const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `probe_steps_${process.pid}`;
const rounds = Number(process.argv[2] ?? 300);
const typeLimit = Number(process.argv[3] ?? 5);
const store = new PostgresStore({ connectionString: url, schema, poolSize: 2 });
const admin = new pg.Client(url);
await admin.connect();

const success = (task: Task): AttemptOutcome => ({ kind: 'SUCCESS', lease: leaseOf(task), artifactId: null, resultJson: null, progress: null });
const median = (xs: number[]): string => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(3);
async function time(into: number[], work: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await work();
  into.push(performance.now() - started);
}

try {
  await store.migrate();
  const tasks = ['ping', 'limited'].map((type) => defineTask({ type, execute: () => undefined }));
  const client = createClient({ store, tasks });
  const ping: number[] = [];

  // One task at a time.
  const params = { workerId: 'w', taskTypes: ['ping'], limit: 500, leaseMs: 60_000, globalConcurrency: 20, typeConcurrency: 5, liveWithinMs: 30_000 };
  const one = { 'client.submit': [] as number[], 'store insert': [] as number[], 'claim (2 tasks)': [] as number[], 'outcomes (2)': [] as number[] };
  for (let i = 0; i < rounds; i++) {
    await time(one['client.submit'], () => client.submit('ping', {}));
    const newTask = {
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
    };
    await time(one['store insert'], () => store.insertTasks({ tasks: [newTask] }));
    let claimed: Task[] = [];
    await time(one['claim (2 tasks)'], async () => {
      claimed = await store.claimTasks(params);
    });
    await time(one['outcomes (2)'], () => store.finishAttempts({ outcomes: claimed.map(success) }));
    await time(ping, () => admin.query('SELECT 1'));
  }

  // Under a binding type limit: a backlog of its own type, then cycles of `typeLimit` tasks.
  const limited = { ...params, taskTypes: ['limited'], typeConcurrency: typeLimit };
  const backlog = rounds * typeLimit * 2 + typeLimit;
  for (let i = 0; i < backlog; i += 1000)
    await client.submitMany(Array.from({ length: Math.min(1000, backlog - i) }, () => ({ type: 'limited', payload: {} })));
  const cycle = { 'outcomes + claim in one statement': [] as number[], 'outcomes alone': [] as number[], 'claim alone': [] as number[] };
  let held = await store.claimTasks(limited);
  for (let i = 0; i < rounds; i++) {
    await time(cycle['outcomes + claim in one statement'], async () => {
      held = (await store.finishAndClaim({ outcomes: held.map(success), claim: limited })).claimed;
    });
  }
  for (let i = 0; i < rounds; i++) {
    await time(cycle['outcomes alone'], () => store.finishAttempts({ outcomes: held.map(success) }));
    await time(cycle['claim alone'], async () => {
      held = await store.claimTasks(limited);
    });
  }

  console.log(`median ms over ${rounds} rounds; SELECT 1 ${median(ping)}`);
  console.log('one task at a time:');
  for (const [name, xs] of Object.entries(one)) console.log(`  ${name.padEnd(34)} ${median(xs)}`);
  console.log(`under a type limit of ${typeLimit}:`);
  for (const [name, xs] of Object.entries(cycle)) console.log(`  ${name.padEnd(34)} ${median(xs)}`);
  console.log(`  → ${Math.round((typeLimit * 1000) / Number(median(cycle['outcomes + claim in one statement'])))} tasks/s through the limit`);
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}

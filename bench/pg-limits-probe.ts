/**
 * PostgreSQL under binding limits, step by step, through the store contract
 * (no worker): the round trip of outcomes + next claim in one statement
 * (finishAndClaim), then of each alone, against SELECT 1. Under binding
 * limits a worker's rate is the per-type limit divided by that round trip.
 * Run: npx tsx bench/pg-limits-probe.ts [rounds=600] [typeLimit=5]
 * PGOPTIONS='-c synchronous_commit=off' (read by pg) shows what the commits'
 * WAL flushes cost.
 */
import pg from 'pg';
import { uuidv7 } from '../src/core/ids.js';
import type { Task } from '../src/core/task.js';
import { PostgresStore } from '../src/postgres.js';
import type { AttemptOutcome } from '../src/store/types.js';

const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `probe_limits_${process.pid}`;
const rounds = Number(process.argv[2] ?? 600);
const typeLimit = Number(process.argv[3] ?? 5);
const store = new PostgresStore({ connectionString: url, schema, poolSize: 2 });
const admin = new pg.Client(url);
await admin.connect();
try {
  await store.migrate();
  const total = rounds * typeLimit * 2 + typeLimit;
  for (let i = 0; i < total; i += 1000) {
    const tasks = Array.from({ length: Math.min(1000, total - i) }, () => ({
      id: uuidv7(),
      taskType: 'noop',
      payloadJson: '{}',
      priority: 0,
      delayMs: 0,
      availableAt: null,
      deadlineAt: null,
      maxAttempts: 3,
      owner: null,
      idempotencyKey: null,
      traceId: null,
    }));
    await store.insertTasks({ tasks });
  }
  const params = { workerId: 'w', taskTypes: ['noop'], limit: 500, leaseMs: 60_000, globalConcurrency: 20, typeConcurrency: typeLimit, liveWithinMs: 30_000 };
  const success = (task: Task): AttemptOutcome => ({
    kind: 'SUCCESS',
    lease: { taskId: task.id, workerId: 'w', attempt: task.attemptCount, token: task.leaseToken ?? '' },
    artifactId: null,
    resultJson: null,
    progress: null,
  });
  let held = await store.claimTasks(params);
  let started = performance.now();
  for (let i = 0; i < rounds; i++) held = (await store.finishAndClaim({ outcomes: held.map(success), claim: params })).claimed;
  const combined = (performance.now() - started) / rounds;
  let finishing = 0;
  let claiming = 0;
  for (let i = 0; i < rounds; i++) {
    const a = performance.now();
    await store.finishAttempts({ outcomes: held.map(success) });
    const b = performance.now();
    held = await store.claimTasks(params);
    claiming += performance.now() - b;
    finishing += b - a;
  }
  started = performance.now();
  for (let i = 0; i < rounds; i++) await admin.query('SELECT 1');
  const ping = (performance.now() - started) / rounds;
  console.log(`type limit ${typeLimit}, ${rounds} rounds each (ms per round trip)`);
  console.log(`outcomes + claim in one statement  ${combined.toFixed(3)}  (${Math.round((typeLimit * 1000) / combined)} tasks/s)`);
  console.log(`outcomes alone                     ${(finishing / rounds).toFixed(3)}`);
  console.log(`claim alone                        ${(claiming / rounds).toFixed(3)}`);
  console.log(`SELECT 1                           ${ping.toFixed(3)}`);
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}

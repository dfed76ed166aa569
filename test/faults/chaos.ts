/**
 * The seeded chaos run (FAULTS.md 25): `npm run test:chaos -- --seed N --minutes M [--workers K]`.
 *
 * A test-owned PostgreSQL cluster, K worker processes kept alive by a
 * supervisor (a dead one is restarted, as systemd would), a workload
 * submitted all along, and faults drawn at random from the cases of the fault
 * suite. At the end the faults stop, the backlog drains, and I1–I5 are
 * checked. It prints the seed first and a JSON summary last; it exits 1 when
 * an invariant fails.
 *
 * Replaying: the seed fixes the workload's payloads, the fault sequence and
 * the pauses between faults. What it cannot fix is the machine's timing (which
 * task a SIGKILL lands on), so a seed replays the same storm, and a timing
 * bug it found shows again under that storm, usually within a run or two.
 */
import { parseArgs } from 'node:util';
import { killAllChildren, type ChildWorker } from '../process/harness.js';
import { waitFor } from '../helpers/wait.js';
import { clusterTools, TestCluster } from './cluster.js';
import { FaultEnvironment, TIMING } from './environment.js';
import type { FaultPayload } from './fault-child.js';
import { FAULT_ACTIONS, FAULTS, type ChaosWorld, type FaultName } from './chaos-faults.js';

const { values } = parseArgs({ options: { seed: { type: 'string' }, minutes: { type: 'string', default: '10' }, workers: { type: 'string', default: '3' } } });
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const minutes = Number(values.minutes);
const workerCount = Number(values.workers);
if (!Number.isInteger(seed) || !(minutes > 0) || !(workerCount >= 1))
  throw new Error('usage: npm run test:chaos -- --seed <integer> --minutes <number> --workers <integer>');
console.log(
  `chaos: seed ${seed}, ${minutes} min, ${workerCount} workers (replay: npm run test:chaos -- --seed ${seed} --minutes ${minutes} --workers ${workerCount})`,
);

/** mulberry32: small, seedable, good enough to draw faults and payloads. */
function random(seedValue: number): () => number {
  let a = seedValue >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const faultRandom = random(seed);
const workloadRandom = random(seed ^ 0x5bd1e995);

function payload(): FaultPayload {
  const r = workloadRandom();
  if (r < 0.002) return { mode: 'exit' }; // a poison pill now and then
  if (r < 0.02) return { mode: 'busy', ms: 1500, onlyAttempt: 1 };
  if (r < 0.06) return { mode: 'hold', ms: 4000, onlyAttempt: 1 };
  return { mode: 'sleep', ms: Math.floor(5 + workloadRandom() * 150) };
}

const tools = await clusterTools();
if (!tools) throw new Error('the chaos run needs initdb and pg_ctl on PATH');
const cluster = await TestCluster.create(tools);
const env = await FaultEnvironment.open(cluster);
const workers: ChildWorker[] = [];
let generation = 0;
/** Every incarnation, for what a stuck task's earlier holders said about it. */
const incarnations: { worker: ChildWorker; spawnedAt: number }[] = [];
const spawn = (slot: number): ChildWorker => {
  const worker = (workers[slot] = env.worker(`w${slot}-${generation++}`, ['work'], { concurrency: 8, prefetch: 4 }));
  incarnations.push({ worker, spawnedAt: Date.now() });
  return worker;
};
for (let slot = 0; slot < workerCount; slot += 1) spawn(slot);
const world: ChaosWorld = { cluster, workers, random: faultRandom, leaseMs: TIMING.leaseMs };
const injected: Partial<Record<FaultName, number>> = {};
let submitFailures = 0;
let running = true;
let supervising = true;

// Poison pills kill workers during the drain too: the supervisor keeps them alive until the end.
const supervisor = setInterval(
  () =>
    workers.forEach((w, slot) => {
      if (supervising && w.exitCode() !== undefined) spawn(slot);
    }),
  200,
);
const submitter = (async () => {
  while (running) {
    try {
      await env.submit('work', Array.from({ length: 10 }, payload), { maxAttempts: 5 });
    } catch {
      submitFailures += 1; // not acknowledged: not counted
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
})();

const end = Date.now() + minutes * 60_000;
try {
  while (Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 2000 + faultRandom() * 6000));
    const name = FAULTS[Math.floor(faultRandom() * FAULTS.length)]!;
    console.log(`${new Date().toISOString()} fault ${name}`);
    if (await inject(name)) injected[name] = (injected[name] ?? 0) + 1;
  }
} finally {
  running = false;
  await submitter;
  await cluster.restoreHealth();
}
const drained = await waitFor(async () => (await pendingCount().catch(() => -1)) === 0, 'the backlog to drain', 300_000, 1000).then(
  () => true,
  async (error: Error) => (console.log(`${error.message}: ${await pendingCount().catch(String)} left`), false),
);
if (!drained) await describeStuck();
const report = await env.invariants(); // with the workers still running: their sweeps are what I4 waits for
supervising = false;
clearInterval(supervisor);
await Promise.all(workers.map((w) => w.stop(60_000).catch(() => undefined)));
const summary = {
  seed,
  minutes,
  workers: workerCount,
  drained,
  faults: injected,
  faultsTotal: Object.values(injected).reduce((a, b) => a + (b ?? 0), 0),
  submitFailures,
  ...report,
};
console.log(JSON.stringify(summary, null, 2));
await killAllChildren();
await env.close();
await cluster.destroy();
process.exit(report.violations.length === 0 && drained ? 0 : 1);

async function inject(name: FaultName): Promise<boolean> {
  try {
    await FAULT_ACTIONS[name](world);
    return true;
  } catch (error) {
    console.log(`  fault ${name} could not be injected: ${(error as Error).message}`);
    await cluster.restoreHealth(); // whatever it left half done: the next fault starts from a healthy cluster
    return false;
  }
}

/** What a run that did not drain leaves to look at: each worker's last words, and who holds the stuck tasks. */
async function describeStuck(): Promise<void> {
  for (const w of workers) {
    const spawnedAt = new Date(incarnations.find((i) => i.worker === w)!.spawnedAt).toISOString();
    console.log(w.config.label, 'spawned', spawnedAt, 'exit', w.exitCode(), 'ready', w.has('ready'), JSON.stringify(w.events.slice(-5)));
    if (!w.has('ready') || w.stderrTail().trim() !== '') console.log(`${w.config.label} stderr:\n${w.stderrTail()}`);
  }
  console.log(
    JSON.stringify(
      await cluster.query(`SELECT status, lease_owner, lease_until < now() AS expired, count(*) FROM "${env.schema}".system_async_task
    WHERE status NOT IN ('SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED') GROUP BY 1, 2, 3`),
    ),
  );
  // A few stuck tasks: each one's row, attempts and every event its workers said about it (a handler that never
  // returned shows `started` with nothing after; an outcome that was never written, `completed` without the row).
  const stuck = await cluster.query<{ id: string; attempt_count: number; lease_owner: string | null }>(
    `SELECT id, attempt_count, lease_owner FROM "${env.schema}".system_async_task
    WHERE status NOT IN ('SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED') ORDER BY id LIMIT 5`,
  );
  for (const task of stuck) {
    const said = incarnations.flatMap(({ worker: w }) => w.events.filter((e) => e.id === task.id).map((e) => ({ by: w.config.label, ...e })));
    console.log('stuck', JSON.stringify(task), JSON.stringify(await env.attempts(task.id)), JSON.stringify(said));
  }
}

async function pendingCount(): Promise<number> {
  const rows = await cluster.query<{ n: string }>(
    `SELECT count(*) AS n FROM "${env.schema}".system_async_task WHERE status NOT IN ('SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED')`,
  );
  return Number(rows[0]!.n);
}

/**
 * The poison pill (FAULTS.md 13, issue 11's B3): one task whose handler
 * kills its process (process.exit(1)) on every attempt, beside innocent
 * tasks in flight in the same process; a supervisor restarts the process
 * each time it dies, as systemd or Kubernetes would (poison.fast.test.ts).
 */
import { waitFor } from '../helpers/wait.js';
import type { ChildWorker } from '../process/harness.js';
import type { FaultEnvironment } from './environment.js';

export interface PoisonRun {
  poison: string;
  innocent: string[];
  restarts: number;
}

export async function runPoisonPill(env: FaultEnvironment, maxAttempts = 3): Promise<PoisonRun> {
  const [poison] = await env.submit('work', [{ mode: 'exit' }], { maxAttempts });
  const innocent = await env.submit(
    'work',
    Array.from({ length: 3 }, () => ({ mode: 'sleep' as const, ms: 1500 })),
    { maxAttempts },
  );
  let restarts = 0;
  // A lease of 5 s, not the suite's 2 s: an innocent task must lose leases only to the poison's crashes, never to a
  // heartbeat that a loaded machine delayed (its third lost lease would cost an attempt, as the rule says).
  const worker = { concurrency: 4, leaseMs: 5000 };
  let current: ChildWorker = env.worker('poison-0', ['work'], worker);
  const settled = async () => (await Promise.all([poison!, ...innocent].map((id) => env.statusOf(id)))).every((s) => s === 'SUCCESS' || s === 'FAILED');
  await waitFor(
    async () => {
      if (await settled()) return true;
      if (current.exitCode() !== undefined) current = env.worker(`poison-${++restarts}`, ['work'], worker);
      return false;
    },
    'the poison and its neighbours to settle',
    120_000,
    100,
  );
  await current.stop().catch(() => undefined);
  return { poison: poison!, innocent, restarts };
}

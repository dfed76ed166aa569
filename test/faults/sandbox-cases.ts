/**
 * Sandboxed handlers under faults (issue 27, part 5; core/sandbox.ts), with
 * real worker processes on every store: FAULTS.md 11 with the busy loop in a
 * sandbox — the worker's own event loop stays free, so the ordinary tasks
 * beside it keep their leases and succeed on their first attempt, and the
 * busy thread is terminated at its timeout; and 13's OOM in a sandbox — the
 * thread dies, not the process: the hog fails SANDBOX_OUT_OF_MEMORY after its
 * attempts, its neighbours succeed uncharged. Each dialect's
 * sandbox-<dialect>.fast.test.ts runs them.
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import { TIMING, type FaultEnvironment } from './environment.js';

const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;
const NEIGHBOURS = 4;

export function sandboxFaultCases(env: () => FaultEnvironment): void {
  it('FAULTS.md 11 sandboxed: a busy loop for 3 leases blocks only its thread; the tasks beside it keep their leases, it is terminated at its timeout', async () => {
    const worker = env().worker(
      'sbx-busy',
      ['work', 'sbx'],
      { concurrency: NEIGHBOURS + 1, recoveryIntervalMs: 0 },
      { sandboxTypes: ['sbx'], sandboxTimeoutMs: 3 * TIMING.leaseMs, sandbox: { terminateGraceMs: 200 } },
    );
    // Another process sweeps: a lease the busy worker failed to renew would be taken from it.
    const sweeper = env().worker('sbx-sweeper', ['idle']);
    await Promise.all([worker.until('ready'), sweeper.until('ready')]);
    const [busy] = await env().submit('sbx', [{ mode: 'busy' }], { maxAttempts: 1 });
    await worker.until('started', 60_000, busy);
    // Each neighbour outlives a lease: it succeeds on attempt 1 only if its lease was renewed while the loop ran.
    const neighbours = await env().submit(
      'work',
      Array.from({ length: NEIGHBOURS }, () => ({ mode: 'sleep' as const, ms: 2 * TIMING.leaseMs })),
    );
    for (const id of neighbours) await worker.until('completed', RESCUE_MS, id);
    await waitFor(async () => (await env().statusOf(busy!)) === 'FAILED', 'the busy task to be terminated at its timeout', RESCUE_MS, 100);
    const task = (await env().store.getTask({ id: busy!, scope: Scope.global() }))!;
    expect([task.lastErrorCode, task.attemptCount]).toEqual(['TIMEOUT', 1]);
    for (const id of neighbours) {
      expect(
        (await env().attempts(id)).map((a) => [a.attempt, a.worker_id, a.outcome]),
        id,
      ).toEqual([[1, 'sbx-busy', 'SUCCESS']]);
    }
    expect(worker.events.filter((e) => e.event === 'leaseLost')).toEqual([]);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    // The thread is gone and its slot free: another sandboxed task runs (in a new thread) and succeeds. (After the
    // invariants: a sandboxed handler writes no effect, which I2 would count as a gap.)
    const [after] = await env().submit('sbx', [{}]);
    await worker.until('completed', RESCUE_MS, after);
    await Promise.all([worker.stop(), sweeper.stop()]);
  }, 120_000);

  it('FAULTS.md 13 sandboxed: a handler that exhausts its memory limit kills its thread, not the process; it fails SANDBOX_OUT_OF_MEMORY after its attempts', async () => {
    const worker = env().worker(
      'sbx-hog',
      ['work', 'sbx'],
      { concurrency: NEIGHBOURS + 1, recoveryIntervalMs: 0, retry: { baseDelayMs: 10, maxDelayMs: 20, jitter: 0 } },
      { sandboxTypes: ['sbx'], sandbox: { maxOldGenerationSizeMb: 32 } },
    );
    await worker.until('ready');
    const neighbours = await env().submit(
      'work',
      Array.from({ length: NEIGHBOURS }, () => ({ mode: 'sleep' as const, ms: 1000 })),
    );
    const [hog] = await env().submit('sbx', [{ mode: 'hog' }], { maxAttempts: 2 });
    await waitFor(async () => (await env().statusOf(hog!)) === 'FAILED', 'the hog to fail for good', RESCUE_MS, 100);
    for (const id of neighbours) await worker.until('completed', RESCUE_MS, id);
    const task = (await env().store.getTask({ id: hog!, scope: Scope.global() }))!;
    expect([task.lastErrorCode, task.attemptCount]).toEqual(['SANDBOX_OUT_OF_MEMORY', 2]);
    for (const id of neighbours)
      expect(
        (await env().attempts(id)).map((a) => [a.attempt, a.outcome]),
        id,
      ).toEqual([[1, 'SUCCESS']]);
    expect(worker.exitCode()).toBeUndefined(); // the process lives on
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await worker.stop();
  }, 120_000);
}

/**
 * Durable steps under worker faults (issue 26; FAULTS.md 1 and 3 for a
 * handler made of ctx.step calls): a worker killed with -9 in the middle of a
 * step, and a zombie (SIGSTOP while its lease is taken from it) that wakes up
 * and tries to record the step it was running. One set of cases for every
 * store, with real OS processes (fault-child.ts, mode `steps`).
 *
 * Checked each time: the task completes on another worker; each completed
 * step's fn ran once (the step in flight at the fault runs again: it never
 * completed); no step is recorded twice; FAULTS.md's invariants hold.
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import { TIMING, type FaultEnvironment } from './environment.js';
import type { FaultDialect } from './targets.js';

const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;
const G = Scope.global();

async function recordedSteps(env: FaultEnvironment, id: string): Promise<[string, number, string][]> {
  return (await env.store.listSteps({ taskId: id })).map((s) => [s.name, s.attempt, s.workerId]);
}

export function stepFaultCases(_dialect: FaultDialect, env: () => FaultEnvironment): void {
  it('kill -9 in the middle of step 2: another worker replays step 1, runs steps 2 and 3; no completed step runs twice, none is recorded twice', async () => {
    const victim = env().worker('step-kill-a', ['work'], { concurrency: 2, recoveryIntervalMs: 0 });
    await victim.until('ready');
    const ids = await env().submit('work', [
      { mode: 'steps', steps: 3, holdStep: 2, ms: 600_000, onlyAttempt: 1 },
      { mode: 'steps', steps: 3, holdStep: 2, ms: 600_000, onlyAttempt: 1 },
    ]);
    await waitFor(() => ids.every((id) => victim.events.some((e) => e.event === 'stepRun' && e.id === id && e.name === 's2')), 'both to be inside step 2');
    victim.signal('SIGKILL');
    await victim.exit();
    const rescuer = env().worker('step-kill-b', ['work']);
    await waitFor(async () => (await env().countStatus('SUCCESS')) === 2, 'the rescuer to complete both', RESCUE_MS, 100);
    for (const id of ids) {
      expect(await env().target.tables.stepRuns(id)).toEqual([
        ['s1', 1, 'step-kill-a'],
        ['s2', 1, 'step-kill-a'], // in flight at the kill: never completed, so it runs again
        ['s2', 2, 'step-kill-b'],
        ['s3', 2, 'step-kill-b'],
      ]);
      expect(await recordedSteps(env(), id)).toEqual([
        ['s1', 1, 'step-kill-a'],
        ['s2', 2, 'step-kill-b'],
        ['s3', 2, 'step-kill-b'],
      ]);
      expect((await env().attempts(id)).map((a) => [a.attempt, a.worker_id, a.outcome])).toEqual([
        [1, 'step-kill-a', 'LEASE_EXPIRED'],
        [2, 'step-kill-b', 'SUCCESS'],
      ]);
    }
    expect(
      rescuer.events
        .filter((e) => e.event === 'stepRecorded')
        .map((e) => e.name)
        .sort(),
    ).toEqual(['s2', 's2', 's3', 's3']);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await rescuer.stop();
  }, 90_000);

  it('a zombie (SIGSTOP in step 2 while its lease is taken, SIGCONT) tries to record step 2: the store refuses it, the handler ends LEASE_LOST', async () => {
    // A long lease and rare heartbeats: the zombie's own clock never tells it that it lost the lease (the database's
    // does, expired by the test), so it reaches the fenced record — which must be the one to refuse.
    const zombie = env().worker('step-zombie-a', ['work'], { concurrency: 1, recoveryIntervalMs: 0, leaseMs: 120_000, heartbeatIntervalMs: 60_000 });
    await zombie.until('ready');
    const [id] = await env().submit('work', [{ mode: 'steps', steps: 3, holdStep: 2, ms: 3000, deafStep: true, onlyAttempt: 1 }]);
    await waitFor(() => zombie.events.some((e) => e.event === 'stepRun' && e.id === id && e.name === 's2'), 'the zombie to be inside step 2');
    await env().freeze(zombie);
    await env().target.tables.expireLease(id!);
    const rescuer = env().worker('step-zombie-b', ['work']);
    await waitFor(async () => (await env().statusOf(id!)) === 'SUCCESS', 'the rescuer to complete the task', RESCUE_MS, 100);
    const settled = await env().store.getTask({ id: id!, scope: G });
    const stepsBefore = await recordedSteps(env(), id!);
    zombie.signal('SIGCONT');
    const refused = await zombie.until('stepRefused', 30_000, id).catch((error: Error) => {
      throw new Error(`${error.message}\n${JSON.stringify(zombie.events.slice(-10))}\n${zombie.log}`);
    });
    expect([refused.name, refused.attempt]).toEqual(['s2', 1]);
    const aborted = await zombie.until('aborted', 15_000, id);
    expect([aborted.reason, aborted.step]).toEqual(['LEASE_LOST', 's2']);
    await zombie.until('leaseLost', 15_000, id);
    await zombie.stop();
    expect(zombie.has('stepRecorded', id) && zombie.events.some((e) => e.event === 'stepRecorded' && e.name !== 's1')).toBe(false);
    // The refused record changed nothing: the steps and the task are as the rescuer left them.
    expect(await recordedSteps(env(), id!)).toEqual(stepsBefore);
    expect(stepsBefore).toEqual([
      ['s1', 1, 'step-zombie-a'],
      ['s2', 2, 'step-zombie-b'],
      ['s3', 2, 'step-zombie-b'],
    ]);
    expect(await env().store.getTask({ id: id!, scope: G })).toEqual(settled);
    expect(await env().target.tables.stepRuns(id!)).toEqual([
      ['s1', 1, 'step-zombie-a'],
      ['s2', 1, 'step-zombie-a'],
      ['s2', 2, 'step-zombie-b'],
      ['s3', 2, 'step-zombie-b'],
    ]);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await rescuer.stop();
  }, 90_000);
}

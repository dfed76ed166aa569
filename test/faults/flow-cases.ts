/**
 * Faults in a flow (issue 26), one set of cases for every store: kill -9 of
 * the worker mid-parent and just after a parent's outcome committed, and a
 * zombie (SIGSTOP past its lease) completing a parent. In every case the
 * flow completes, each node runs to its effect once, and no child starts
 * before its parents' success is committed. Each dialect runs them from
 * flows-<dialect>.fast.test.ts with real OS processes (fault-child.ts).
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import { TIMING, type FaultEnvironment } from './environment.js';

const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;
const G = Scope.global();

/** A diamond: root, two parts waiting for it, a merge waiting for both (the parts and the merge of type `next`). */
function diamond(env: FaultEnvironment, root: Parameters<FaultEnvironment['submitFlow']>[0][number]['payload']) {
  return env.submitFlow([
    { key: 'root', type: 'work', payload: root },
    { key: 'left', type: 'next', payload: { ms: 10 }, dependsOn: ['root'] },
    { key: 'right', type: 'next', payload: { ms: 10 }, dependsOn: ['root'] },
    { key: 'merge', type: 'next', payload: { ms: 10 }, dependsOn: ['left', 'right'] },
  ]);
}

/**
 * Every node ended SUCCESS, each ran one successful attempt, each effect written once. That no child started before
 * its parents' success was committed is what BLOCKED guarantees (a blocked row is not claimable until the commit that
 * ends its last parent): the cases assert the children BLOCKED while a parent runs, and the flows suite checks it in the
 * handler. Timestamps cannot: PostgreSQL's claim reads its clock before its query's snapshot, so a claim made just
 * after a parent's commit may stamp its start a few milliseconds before the parent's finish_time (seen under load).
 */
async function expectFlowDone(env: FaultEnvironment, ids: Record<string, string>): Promise<void> {
  for (const id of Object.values(ids)) {
    expect(await env.statusOf(id)).toBe('SUCCESS');
    expect((await env.attempts(id)).filter((a) => a.outcome === 'SUCCESS')).toHaveLength(1);
  }
  expect(await env.invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
}

export function flowFaultCases(env: () => FaultEnvironment): void {
  it('kill -9 mid-parent: the parent runs once more elsewhere, then its children, each once; the flow completes', async () => {
    const victim = env().worker('flow-a', ['work', 'next'], { concurrency: 4, recoveryIntervalMs: 0 });
    await victim.until('ready');
    const ids = await diamond(env(), { mode: 'sleep', ms: 10_000, onlyAttempt: 1 });
    await victim.until('started', 30_000, ids.root);
    expect(await env().statusOf(ids.left!)).toBe('BLOCKED');
    victim.signal('SIGKILL');
    await victim.exit();
    const rescuer = env().worker('flow-b', ['work', 'next']);
    await waitFor(async () => (await env().statusOf(ids.merge!)) === 'SUCCESS', 'the rescuer to finish the flow', RESCUE_MS, 100);
    expect((await env().attempts(ids.root!)).map((a) => [a.attempt, a.worker_id, a.outcome])).toEqual([
      [1, 'flow-a', 'LEASE_EXPIRED'],
      [2, 'flow-b', 'SUCCESS'],
    ]);
    for (const key of ['left', 'right', 'merge']) expect((await env().attempts(ids[key]!)).map((a) => a.outcome)).toEqual(['SUCCESS']);
    await expectFlowDone(env(), ids);
    await rescuer.stop();
  }, 90_000);

  it('kill -9 right after a parent’s outcome: its children were released in that same commit, and run once elsewhere', async () => {
    // The victim runs only the root's type: its children wait for another worker.
    const victim = env().worker('flow-c', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await victim.until('ready');
    const ids = await diamond(env(), { mode: 'sleep', ms: 10 });
    await victim.until('completed', 30_000, ids.root);
    victim.signal('SIGKILL');
    await victim.exit();
    // Nothing ran after the outcome's commit, and nothing else wrote: the release committed with it.
    expect(await env().statusOf(ids.left!)).toBe('QUEUED');
    expect(await env().statusOf(ids.right!)).toBe('QUEUED');
    expect(await env().statusOf(ids.merge!)).toBe('BLOCKED');
    const rescuer = env().worker('flow-d', ['next']);
    await waitFor(async () => (await env().statusOf(ids.merge!)) === 'SUCCESS', 'the rescuer to finish the flow', RESCUE_MS, 100);
    expect((await env().attempts(ids.root!)).map((a) => a.outcome)).toEqual(['SUCCESS']);
    await expectFlowDone(env(), ids);
    await rescuer.stop();
  }, 90_000);

  it('a zombie parent (SIGSTOP past its lease) completes after another did: its completion is fenced, no child runs twice', async () => {
    const zombie = env().worker('flow-z', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await zombie.until('ready');
    const ids = await diamond(env(), { mode: 'hold', ms: 600_000, completeAnyway: true, onlyAttempt: 1 });
    await zombie.until('started', 30_000, ids.root);
    await env().freeze(zombie);
    const rescuer = env().worker('flow-r', ['work', 'next']);
    await waitFor(async () => (await env().statusOf(ids.merge!)) === 'SUCCESS', 'the rescuer to finish the flow', RESCUE_MS, 100);
    const settled = await Promise.all(Object.values(ids).map((id) => env().store.getTask({ id, scope: G })));
    zombie.signal('SIGCONT');
    expect((await zombie.until('aborted', 15_000, ids.root)).reason).toBe('LEASE_LOST');
    await zombie.until('leaseLost', 15_000, ids.root);
    await zombie.stop();
    // The stale completion changed nothing: no node, no edge.
    expect(await Promise.all(Object.values(ids).map((id) => env().store.getTask({ id, scope: G })))).toEqual(settled);
    for (const key of ['left', 'right', 'merge']) expect((await env().attempts(ids[key]!)).map((a) => a.outcome)).toEqual(['SUCCESS']);
    expect(settled[0]!.result).toEqual({ by: 'flow-r', attempt: 2 });
    await expectFlowDone(env(), ids);
    await rescuer.stop();
  }, 90_000);
}

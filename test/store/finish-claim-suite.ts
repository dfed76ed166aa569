/**
 * finishAndClaim, shared by the stores that have it (capabilities.finishAndClaim):
 * the claim must see the slots the outcomes freed (limits stay invariants), a
 * stale outcome must change nothing and keep its slot, a failure for good
 * answers its dead letter, and the claimed tasks must be leased exactly as
 * claimTasks leases them (attempt rows included).
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { AttemptOutcome, Store } from '../../src/store/types.js';
import { claimParams, FAILURE, leaseOf, newTask } from './fixtures.js';

const success = (task: Task): AttemptOutcome => ({ kind: 'SUCCESS', lease: leaseOf(task), artifactId: null, resultJson: null, progress: null });

export function finishAndClaimCases(store: () => Store): void {
  it('claims into the slots its outcomes freed, and only those', async () => {
    expect(store().capabilities.finishAndClaim).toBe(true);
    const limited = claimParams({ taskTypes: ['fc'], limit: 10, typeConcurrency: 2 });
    await store().insertTasks({ tasks: Array.from({ length: 6 }, () => newTask({ taskType: 'fc', maxAttempts: 1 })) });
    const [a, b] = await store().claimTasks(limited);
    expect(b).toBeDefined();
    expect(await store().claimTasks(limited)).toEqual([]); // the limit binds
    const outcomes: AttemptOutcome[] = [
      { kind: 'SUCCESS', lease: leaseOf(a!), artifactId: 'art-a', resultJson: JSON.stringify({ ok: true }), progress: null },
      // a stale lease (another attempt number): changes nothing, and b keeps its slot
      { kind: 'SUCCESS', lease: { ...leaseOf(b!), attempt: b!.attemptCount + 1 }, artifactId: null, resultJson: null, progress: null },
    ];
    const first = await store().finishAndClaim({ outcomes, claim: limited });
    expect(first.applied).toEqual([true, false]);
    expect(first.claimed).toHaveLength(1);
    const [c] = first.claimed;
    expect(c).toMatchObject({ taskType: 'fc', status: 'RUNNING', leaseOwner: 'w1', attemptCount: 1 });
    expect(await store().getTask({ id: a!.id, scope: Scope.global() })).toMatchObject({ status: 'SUCCESS', artifactId: 'art-a', result: { ok: true } });
    expect(await store().getTask({ id: b!.id, scope: Scope.global() })).toMatchObject({ status: 'RUNNING' });
    expect(await store().getTask({ id: c!.id, scope: Scope.global() })).toMatchObject({ status: 'RUNNING', leaseOwner: 'w1', attemptCount: 1 });
    expect((await store().listAttempts({ taskId: c!.id })).map((x) => x.attempt)).toEqual([1]);
    expect((await store().listAttempts({ taskId: a!.id }))[0]).toMatchObject({ outcome: 'SUCCESS' });

    // A failure for good frees its slot too, and answers its dead letter.
    const second = await store().finishAndClaim({
      outcomes: [{ kind: 'FAILED', lease: leaseOf(b!), progress: null, failure: { ...FAILURE, retryable: false } }, success(c!)],
      claim: limited,
    });
    expect(second.applied).toEqual([true, true]);
    expect(second.deadLetters.map((d) => d.taskId)).toEqual([b!.id]);
    expect(second.claimed).toHaveLength(2);
    expect(await store().getTask({ id: b!.id, scope: Scope.global() })).toMatchObject({ status: 'FAILED' });
    const third = await store().finishAndClaim({ outcomes: second.claimed.map(success), claim: limited });
    expect(third.claimed).toHaveLength(1); // the sixth task
    // Nothing left to claim: the outcomes are written all the same.
    const last = await store().finishAndClaim({ outcomes: third.claimed.map(success), claim: limited });
    expect(last).toEqual({ applied: [true], deadLetters: [], claimed: [] });
    expect((await store().countByStatus({ scope: Scope.global(), taskType: 'fc' })).SUCCESS).toBe(5);
  });
}

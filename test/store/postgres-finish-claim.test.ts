/**
 * finishAndClaim: outcomes, then a claim, in one round trip. The claim must
 * see the slots the outcomes freed (limits stay invariants), a stale outcome
 * must change nothing and keep its slot, and the claimed tasks must be leased
 * exactly as claimTasks leases them (attempt rows included).
 */
import { beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AttemptOutcome } from '../../src/store/types.js';
import { postgresAvailable, sharedPostgresStore } from '../helpers/postgres.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-finish-claim.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: outcomes and the next claim in one round trip', () => {
  const shared = sharedPostgresStore(2);
  let store: PostgresStore;
  beforeAll(() => {
    ({ store } = shared());
  });

  it('claims into the slots its outcomes freed, and only those', async () => {
    const limited = claimParams({ taskTypes: ['fc'], limit: 10, typeConcurrency: 2 });
    await store.insertTasks({ tasks: Array.from({ length: 6 }, () => newTask({ taskType: 'fc' })) });
    const [a, b] = await store.claimTasks(limited);
    expect(b).toBeDefined();
    expect(await store.claimTasks(limited)).toEqual([]); // the limit binds
    const outcomes: AttemptOutcome[] = [
      { kind: 'SUCCESS', lease: leaseOf(a!), artifactId: 'art-a', resultJson: JSON.stringify({ ok: true }), progress: null },
      // a stale lease (another attempt number): changes nothing, and b keeps its slot
      { kind: 'SUCCESS', lease: { ...leaseOf(b!), attempt: b!.attemptCount + 1 }, artifactId: null, resultJson: null, progress: null },
    ];
    const first = await store.finishAndClaim({ outcomes, claim: limited });
    expect(first.applied).toEqual([true, false]);
    expect(first.claimed).toHaveLength(1);
    const [c] = first.claimed;
    expect(c).toMatchObject({ taskType: 'fc', status: 'RUNNING', leaseOwner: 'w1', attemptCount: 1 });
    expect(await store.getTask({ id: a!.id, scope: Scope.global() })).toMatchObject({ status: 'SUCCESS', artifactId: 'art-a', result: { ok: true } });
    expect(await store.getTask({ id: b!.id, scope: Scope.global() })).toMatchObject({ status: 'RUNNING' });
    expect((await store.listAttempts({ taskId: c!.id })).map((x) => x.attempt)).toEqual([1]);
    expect((await store.listAttempts({ taskId: a!.id }))[0]).toMatchObject({ outcome: 'SUCCESS' });

    // Both leases end: two slots, two claims; then nothing is left to claim.
    const second = await store.finishAndClaim({
      outcomes: [b!, c!].map((t) => ({ kind: 'SUCCESS', lease: leaseOf(t), artifactId: null, resultJson: null, progress: null }) as AttemptOutcome),
      claim: limited,
    });
    expect(second.applied).toEqual([true, true]);
    expect(second.claimed).toHaveLength(2);
    const third = await store.finishAndClaim({
      outcomes: second.claimed.map((t) => ({ kind: 'SUCCESS', lease: leaseOf(t), artifactId: null, resultJson: null, progress: null }) as AttemptOutcome),
      claim: limited,
    });
    expect(third.claimed).toHaveLength(1); // the sixth task
    const last = await store.finishAndClaim({
      outcomes: third.claimed.map((t) => ({ kind: 'SUCCESS', lease: leaseOf(t), artifactId: null, resultJson: null, progress: null }) as AttemptOutcome),
      claim: limited,
    });
    expect(last).toEqual({ applied: [true], deadLetters: [], claimed: [] });
    expect((await store.countByStatus({ scope: Scope.global(), taskType: 'fc' })).SUCCESS).toBe(6);
  });

  it('a process of the previous release that writes ABANDONED during a rolling upgrade gets the hand-back it meant, uncharged', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'legacy', maxAttempts: 1 })] });
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['legacy'] }));
    // The call the previous release makes (its own copy of finishAttempts), with the kind it knew.
    const legacy = { kind: 'ABANDONED', lease: leaseOf(task!), progress: null } as unknown as AttemptOutcome;
    expect(await store.finishAttempts({ outcomes: [legacy] })).toEqual({ applied: [true], deadLetters: [] });
    expect(await store.getTask({ id: task!.id, scope: Scope.global() })).toMatchObject({ status: 'QUEUED', attemptCount: 1, attemptBase: 1 });
    expect((await store.listAttempts({ taskId: task!.id })).map((x) => x.outcome)).toEqual(['RELEASED']);
  });
});

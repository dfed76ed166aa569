/**
 * finishAndClaim: outcomes, then a claim, in one round trip (the cases every
 * store with it shares: finish-claim-suite.ts), and PostgreSQL's own.
 */
import { beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AttemptOutcome } from '../../src/store/types.js';
import { postgresAvailable, sharedPostgresStore } from '../helpers/postgres.js';
import { finishAndClaimCases } from './finish-claim-suite.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-finish-claim.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: outcomes and the next claim in one round trip', () => {
  const shared = sharedPostgresStore(2);
  let store: PostgresStore;
  beforeAll(() => {
    ({ store } = shared());
  });

  finishAndClaimCases(() => store);

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

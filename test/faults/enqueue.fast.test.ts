/**
 * Transactional enqueue (FAULTS.md 16): a task inserted inside the caller's
 * transaction is never seen when it rolls back, and cannot be claimed while
 * the transaction is still open — only once it commits.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import { describeWithCluster } from './describe-store.js';
import { TIMING } from './environment.js';

await describeWithCluster('transactional enqueue', (env) => {
  const inTransaction = async <T>(body: (client: pg.Client) => Promise<T>): Promise<{ client: pg.Client; value: T }> => {
    const client = new pg.Client({ connectionString: env().cluster.url });
    await client.connect();
    await client.query('BEGIN');
    return { client, value: await body(client) };
  };

  it('rolled back: the task is never seen; held open: it is not claimable until it commits', async () => {
    const worker = env().worker('tx-a', ['work'], { concurrency: 4 });
    await worker.until('ready');
    const rolledBack = await inTransaction((client) => env().submit('work', [{ ms: 5 }], { transaction: client }));
    await rolledBack.client.query('ROLLBACK');
    await rolledBack.client.end();

    const held = await inTransaction((client) => env().submit('work', [{ ms: 5 }], { transaction: client }));
    const [witness] = await env().submit('work', [{ ms: 5 }]); // committed after the held one was inserted
    await waitFor(async () => (await env().statusOf(witness!)) === 'SUCCESS', 'a committed task to run meanwhile', 30_000, 50);
    // Polls and wake-ups went by (the witness proves the worker claims): the uncommitted task stays invisible.
    await waitFor(() => worker.events.filter((e) => e.event === 'started').length >= 1, 'the witness to start');
    await new Promise((resolve) => setTimeout(resolve, 3 * TIMING.pollIntervalMs + TIMING.leaseMs)); // a quiet window the claim must not use
    expect(worker.has('started', held.value[0])).toBe(false);
    expect(await env().store.getTask({ id: held.value[0]!, scope: Scope.global() })).toBeNull();
    await held.client.query('COMMIT');
    await held.client.end();
    env().acknowledged.push(...held.value);
    await worker.until('completed', 30_000, held.value[0]);

    expect(await env().store.getTask({ id: rolledBack.value[0]!, scope: Scope.global() })).toBeNull();
    expect(worker.has('started', rolledBack.value[0])).toBe(false);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await worker.stop();
  }, 90_000);
});

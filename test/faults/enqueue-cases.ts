/**
 * Transactional enqueue (FAULTS.md 16), on the stores that take a caller's
 * transaction (PostgreSQL, MySQL/MariaDB): a task inserted inside the
 * caller's transaction is never seen when it rolls back, and while the
 * transaction is held open — across dozens of polls and several sweeps,
 * while other submits, claims and a sweep of an orphan go on beside it — it
 * is neither visible nor claimable; once it commits it runs. SQLite has no
 * transaction a caller could hand in: there the option is refused with a
 * typed error and nothing is written.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { TIMING, type FaultEnvironment } from './environment.js';

/** How long the transaction stays open: several leases and sweeps (FAULTS.md's 30 s, scaled to the 2 s lease). */
const HOLD_MS = 4 * (TIMING.leaseMs + TIMING.recoveryIntervalMs);
const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;

interface CallerTransaction {
  /** What the store's `transaction` option takes: a pg client, a mysql2 connection, inside BEGIN. */
  handle: unknown;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** A transaction of the caller's own, on its own connection to the target's database. */
async function begin(env: FaultEnvironment): Promise<CallerTransaction> {
  const target = env.target.childStore;
  if (target.dialect === 'postgres') {
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    await client.query('BEGIN');
    const end = async (sql: string) => {
      await client.query(sql);
      await client.end();
    };
    return { handle: client, commit: () => end('COMMIT'), rollback: () => end('ROLLBACK') };
  }
  if (target.dialect === 'mysql') {
    const connection = await mysql.createConnection(target.uri);
    await connection.beginTransaction();
    const end = async (sql: string) => {
      await connection.query(sql);
      await connection.end();
    };
    return { handle: connection, commit: () => end('COMMIT'), rollback: () => end('ROLLBACK') };
  }
  throw new Error('SQLite takes no caller transaction');
}

export function enqueueFaultCases(env: () => FaultEnvironment): void {
  it('rolled back: the task is never seen; held open across polls and sweeps: invisible, not claimed, others go on; it runs once committed', async () => {
    // An orphan for the sweep to find during the hold: its worker is killed once the transaction is open.
    const victim = env().worker('tx-v', ['orphan'], { concurrency: 1, recoveryIntervalMs: 0 });
    await victim.until('ready');
    const [orphan] = await env().submit('orphan', [{ mode: 'hold', ms: 600_000, onlyAttempt: 1 }]);
    await victim.until('started', 30_000, orphan);
    const worker = env().worker('tx-a', ['work', 'orphan'], { concurrency: 4 });
    await worker.until('ready');

    const rollingBack = await begin(env());
    const [rolledBack] = await env().submit('work', [{ ms: 5 }], { transaction: rollingBack.handle });
    await rollingBack.rollback();

    const holding = await begin(env());
    const [held] = await env().submit('work', [{ ms: 5 }], { transaction: holding.handle });
    const openedAt = Date.now();
    victim.signal('SIGKILL');
    // While it is open: committed submits run one after another, and the sweep requeues the orphan for tx-a to run.
    const witnesses: string[] = [];
    while (Date.now() - openedAt < HOLD_MS || (await env().statusOf(orphan!)) !== 'SUCCESS') {
      const [witness] = await env().submit('work', [{ ms: 5 }]);
      await worker.until('completed', 30_000, witness);
      witnesses.push(witness!);
      expect(Date.now() - openedAt).toBeLessThan(RESCUE_MS + HOLD_MS);
    }
    expect((await env().attempts(orphan!)).map((a) => [a.worker_id, a.outcome])).toEqual([
      ['tx-v', 'LEASE_EXPIRED'],
      ['tx-a', 'SUCCESS'],
    ]);
    expect(witnesses.length).toBeGreaterThan(1);
    expect(worker.has('started', held)).toBe(false);
    expect(await env().store.getTask({ id: held!, scope: Scope.global() })).toBeNull(); // invisible outside its transaction
    expect(await env().statusOf(witnesses.at(-1)!)).toBe('SUCCESS');

    await holding.commit();
    env().acknowledged.push(held!);
    await worker.until('completed', 30_000, held);
    expect((await env().attempts(held!)).map((a) => [a.attempt, a.outcome])).toEqual([[1, 'SUCCESS']]);
    expect(await env().store.getTask({ id: rolledBack!, scope: Scope.global() })).toBeNull();
    expect(worker.has('started', rolledBack)).toBe(false);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await worker.stop();
  }, 120_000);
}

/** SQLite: no transaction a caller could hand in; the option is refused, typed, and nothing is written. */
export function enqueueRefusedCases(env: () => FaultEnvironment): void {
  it('a submit with a transaction is refused with INVALID_OPTIONS, through the store and the client, and writes nothing', async () => {
    expect(env().store.capabilities.transactionalSubmit).toBe(false);
    const worker = env().worker('tx-s', ['work']);
    await worker.until('ready');
    const refused = await env()
      .submit('work', [{ ms: 5 }], { transaction: {} })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'INVALID_OPTIONS' });
    const client = createClient({ store: env().store, tasks: [defineTask({ type: 'work' })] });
    await expect(client.submit('work', {}, { transaction: {} })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(Object.values(await env().store.countByStatus({ scope: Scope.global() })).reduce((a, b) => a + b, 0)).toBe(0);
    // The worker beside it is unaffected: a plain submit runs.
    const [plain] = await env().submit('work', [{ ms: 5 }]);
    await worker.until('completed', 30_000, plain);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await worker.stop();
  }, 60_000);
}

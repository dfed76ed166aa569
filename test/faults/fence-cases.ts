/**
 * Fencing tokens against a second database (ctx.fence, worker/fence.ts;
 * FAULTS.md's SIGSTOP case, for a system outside the task store): a worker
 * takes its fence and freezes before it writes; its lease expires, a second
 * worker takes the task with a greater fence and writes its effect to a
 * separate database on the same server with the conditional writes the
 * README shows; then the first wakes up and writes as though nothing
 * happened — and the second database refuses it (0 rows), keeping the new
 * holder's row. The task store cannot fence that write: only the fence can.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import { ChildWorker } from '../process/harness.js';
import { TIMING, type FaultEnvironment } from './environment.js';
import type { FenceChildConfig, ForeignDb } from './fence-child.js';

const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;
const LIMITS = { globalConcurrency: 1000, typeConcurrency: 1000 } as const;

/** The effect table of the second database (fence-child.ts writes it). */
export const FOREIGN_TABLE = {
  postgres: 'CREATE TABLE fenced_effect (task_id text PRIMARY KEY, fence bigint NOT NULL, writer text NOT NULL)',
  mysql: 'CREATE TABLE fenced_effect (task_id VARCHAR(64) PRIMARY KEY, fence BIGINT NOT NULL, writer VARCHAR(64) NOT NULL) ENGINE=InnoDB',
} as const;

interface SecondDatabase extends ForeignDb {
  rows(): Promise<{ task_id: string; fence: number; writer: string }[]>;
  drop(): Promise<void>;
}

/** A database of its own beside the task store's, on the same server (`tl_fence_<random>`), with the effect table. */
async function createSecondDatabase(env: FaultEnvironment): Promise<SecondDatabase> {
  const name = `tl_fence_${randomBytes(5).toString('hex')}`;
  const child = env.target.childStore;
  if (child.dialect === 'postgres') {
    const { default: pg } = await import('pg');
    const admin = new pg.Client({ connectionString: child.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(child.url);
    url.pathname = `/${name}`;
    const db = new pg.Client({ connectionString: url.toString() });
    await db.connect();
    await db.query(FOREIGN_TABLE.postgres);
    return {
      dialect: 'postgres',
      url: url.toString(),
      rows: async () => (await db.query('SELECT task_id, fence::integer AS fence, writer FROM fenced_effect ORDER BY task_id')).rows,
      async drop() {
        await db.end();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      },
    };
  }
  if (child.dialect !== 'mysql') throw new Error('a second database needs a server: PostgreSQL or MySQL');
  const { default: mysql } = await import('mysql2/promise');
  const admin = await mysql.createConnection(child.uri);
  await admin.query(`CREATE DATABASE \`${name}\``);
  await admin.query(`USE \`${name}\``);
  await admin.query(FOREIGN_TABLE.mysql);
  const url = new URL(child.uri);
  url.pathname = `/${name}`;
  return {
    dialect: 'mysql',
    url: url.toString(),
    rows: async () => {
      const [rows] = await admin.query('SELECT task_id, CAST(fence AS SIGNED) AS fence, writer FROM fenced_effect ORDER BY task_id');
      return (rows as { task_id: string; fence: number | string; writer: string }[]).map((row) => ({ ...row, fence: Number(row.fence) }));
    },
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.end();
    },
  };
}

export function fenceFaultCases(env: () => FaultEnvironment): void {
  it('SIGSTOP after ctx.fence, another worker takes over and writes to a second database, SIGCONT: the zombie’s write there changes 0 rows', async () => {
    const second = await createSecondDatabase(env());
    const goDir = mkdtempSync(join(tmpdir(), 'tasklease-fence-'));
    const worker = (label: string, options: FenceChildConfig['worker'] = {}) => {
      const foreign: ForeignDb = { dialect: second.dialect, url: second.url };
      const config: FenceChildConfig = { label, store: env().target.childStore, foreign, goDir, holdAttempt: 1, worker: { ...TIMING, ...LIMITS, ...options } };
      return new ChildWorker(config, join(import.meta.dirname, 'fence-child.ts'));
    };
    try {
      const zombie = worker('fence-a', { concurrency: 1, recoveryIntervalMs: 0 });
      await zombie.until('ready');
      const [id] = await env().submit('fenced', [{}]);
      expect((await zombie.until('fenced', 30_000, id)).fence).toBe(1);
      await env().freeze(zombie);
      const rescuer = worker('fence-b');
      const landed = await rescuer.until('foreignWrite', RESCUE_MS, id);
      expect([landed.attempt, landed.fence, landed.updated, landed.upserted]).toEqual([2, 2, 0, 1]);
      await waitFor(async () => (await env().statusOf(id!)) === 'SUCCESS', 'the rescuer to complete the task', RESCUE_MS, 100);
      expect(await second.rows()).toEqual([{ task_id: id, fence: 2, writer: 'fence-b' }]);
      // The zombie wakes up past its lease and, deaf to its signal, writes with the fence it took before.
      writeFileSync(join(goDir, id!), '');
      zombie.signal('SIGCONT');
      const late = await zombie.until('foreignWrite', 30_000, id).catch((error: Error) => {
        throw new Error(`${error.message}\n${JSON.stringify(zombie.events)}\n${zombie.log}`);
      });
      expect([late.attempt, late.fence, late.updated, late.upserted]).toEqual([1, 1, 0, 0]);
      expect(await second.rows()).toEqual([{ task_id: id, fence: 2, writer: 'fence-b' }]);
      // In the task store its lease was gone too: its completion was fenced out, the rescuer's result stays.
      await zombie.until('leaseLost', 15_000, id);
      expect((await env().store.getTask({ id: id!, scope: Scope.global() }))!.result).toEqual({ by: 'fence-b', fence: 2 });
      await Promise.all([zombie.stop(), rescuer.stop()]);
    } finally {
      rmSync(goDir, { recursive: true, force: true });
      await second.drop();
    }
  }, 120_000);
}

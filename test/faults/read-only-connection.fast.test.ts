/**
 * Issue 24 (failover): a connection that answered 25006 (read-only) is
 * discarded, not lent again. After a failover, connections made to the old
 * primary — it came back as a replica before HAProxy marked it down, or a
 * stale DNS name or VIP still pointed at it — stay read-only for as long as
 * they live, while every new connection reaches the new primary. A pool
 * that kept them answered 25006 for ever (riverqueue/river#1225,
 * graphile/worker#449).
 *
 * On the file's own cluster (never the shared server): `ALTER DATABASE …
 * SET default_transaction_read_only` applies to new sessions only, so it
 * makes exactly that situation — the store's sessions opened meanwhile are
 * read-only for good, sessions opened after the RESET are writable. Both of
 * the store's pools are covered: the claim (main pool) and the heartbeat
 * (lease pool), each through a connection taken for its statement
 * (connection.ts withClient). Failed before the fix: the second claim met
 * the same read-only session again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { skipWithoutServer } from '../helpers/factory.js';
import { claimParams, leaseOf, newTask } from '../store/fixtures.js';
import { clusterTools, TestCluster } from './cluster.js';
import { unavailable } from './targets.js';

const missing = await unavailable('postgres');
const APP = 'tl-ro';

if (missing !== null) skipWithoutServer('read-only connections are discarded', missing);
else
  describe('read-only connections are discarded', () => {
    let cluster: TestCluster;
    const stores: PostgresStore[] = [];
    const open = (): PostgresStore => {
      const store = new PostgresStore({ connectionString: cluster.url, schema: 'ro', poolSize: 2, leasePoolSize: 2, applicationName: APP });
      stores.push(store);
      return store;
    };
    beforeAll(async () => {
      cluster = await TestCluster.create((await clusterTools())!);
    }, 120_000);
    afterAll(async () => {
      for (const store of stores) await store.close();
      await cluster?.destroy();
    });

    const sessionsReadOnly = async (on: boolean): Promise<void> => {
      await cluster.query(`ALTER DATABASE postgres ${on ? 'SET default_transaction_read_only = on' : 'RESET default_transaction_read_only'}`);
    };
    const sent = (): void => undefined;

    it('a claim or a heartbeat answered 25006 drops its connection: the next one opens a writable session', async () => {
      const setup = open();
      await setup.migrate();
      await setup.insertTasks({ tasks: [newTask({ taskType: 'alpha' }), newTask({ taskType: 'alpha' })] });
      const [held] = await setup.claimTasks(claimParams({ taskTypes: ['alpha'], limit: 1, onSent: sent }));
      await setup.close();

      // Every session opened from now on is read-only; the store opens its first ones now.
      await sessionsReadOnly(true);
      const store = open();
      const renew = { leases: [leaseOf(held!)], leaseMs: 30_000, onSent: sent };
      await expect(store.claimTasks(claimParams({ taskTypes: ['alpha'], limit: 1, onSent: sent }))).rejects.toThrow(/read-only/);
      await expect(store.renewLeases(renew)).rejects.toThrow(/read-only/);

      // The server is writable again for every new session; the read-only ones the store opened stay read-only.
      await sessionsReadOnly(false);
      const [claimed] = await store.claimTasks(claimParams({ taskTypes: ['alpha'], limit: 1, onSent: sent }));
      expect(claimed?.status).toBe('RUNNING');
      expect(await store.renewLeases(renew)).toMatchObject({ renewed: [held!.id] });
    });
  });

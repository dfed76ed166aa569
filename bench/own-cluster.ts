/**
 * A PostgreSQL cluster of a probe's own (initdb + pg_ctl on another port,
 * test/faults/cluster.ts): no other session's WAL in its figures, and the
 * shared server is never loaded or reconfigured. `run` gets a connected
 * client; the client is ended and the cluster destroyed whatever happens.
 */
import pg from 'pg';
import { clusterTools, TestCluster } from '../test/faults/cluster.js';

export async function withOwnCluster<T>(run: (client: pg.Client, cluster: TestCluster) => Promise<T>): Promise<T> {
  const tools = await clusterTools();
  if (!tools) throw new Error('initdb and pg_ctl are needed (and, as root, a postgres user)');
  const cluster = await TestCluster.create(tools);
  try {
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    try {
      return await run(client, cluster);
    } finally {
      await client.end();
    }
  } finally {
    await cluster.destroy();
  }
}

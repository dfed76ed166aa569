/**
 * Issue 24: the Store conformance suite through a PgBouncer in transaction
 * mode the file starts itself, with pooler: 'transaction' and a small
 * server pool (4 connections), so consecutive statements of one store land
 * on different server connections: submits, claims, heartbeats, outcomes,
 * cancellation, recovery and the control plane keep nothing on a server
 * connection between transactions. Wake-ups go through a direct listener.
 */
import { afterAll, beforeAll } from 'vitest';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { onPostgres, PG_URL } from '../helpers/postgres.js';
import { runStoreConformance } from './conformance.js';

const FILE = 'test/store/postgres-pgbouncer-conformance.test.ts';
const binary = pgbouncerBinary(FILE);
let bouncer: PgBouncer | undefined;

if (binary !== null) {
  beforeAll(async () => {
    bouncer = await startPgBouncer(binary, 'transaction', 4);
  });
  afterAll(async () => {
    await bouncer?.stop();
  });
}

await onPostgres(FILE, 'Store conformance through PgBouncer (transaction mode)', runStoreConformance, {
  available: binary !== null,
  needs: 'PostgreSQL and pgbouncer',
  options: () => ({ connectionString: bouncer!.url, pooler: 'transaction', listenConnectionString: PG_URL }),
});

import { PostgresStore } from '../../src/store/postgres/store.js';
import { onPostgres, PG_URL } from '../helpers/postgres.js';
import { runUnknownOptionSuite } from './options-suite.js';

await onPostgres('test/package/options-postgres.test.ts', 'unknown options', (factory) =>
  runUnknownOptionSuite(factory, {
    construct: () => new PostgresStore({ connectionString: PG_URL, pool_size: 2 } as object),
    field: 'pool_size',
    message:
      'PostgresStore option "pool_size" is unknown: did you mean "poolSize"? (known: connectionString, pool, schema, poolSize, leasePoolSize, leasePool, applicationName, connectTimeoutMs, statementTimeoutMs, pooler, listenConnectionString, pollOnly, historyMoveAfterMs, clock)',
  }),
);

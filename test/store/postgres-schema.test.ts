/**
 * Migrations: safe when several processes start at once (advisory lock),
 * versioned, refusing a schema newer than the code, and at home in any
 * valid schema name (quoted identifiers).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { ErrorCode, TaskLeaseError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { createTestSchema, PG_URL, postgresAvailable, uniqueSchemaName, type TestSchema } from '../helpers/postgres.js';
import { claimParams, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-schema.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: migrations', () => {
  const schemas: TestSchema[] = [];
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema();
    schemas.push(schema);
  });
  afterAll(async () => {
    for (const s of schemas) await s.drop();
  });

  it('six stores migrating one fresh schema at once all succeed, and each version is applied once', async () => {
    const stores = Array.from({ length: 6 }, () => new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 }));
    try {
      await Promise.all(stores.map((s) => s.migrate()));
      const versions = await schema.query<{ version: number }>(`SELECT version FROM "${schema.name}".tasklease_migrations ORDER BY version`);
      // The versions the list holds (gaps are allowed: numbers are reserved per feature), each once.
      expect(versions.map((v) => v.version)).toEqual(PG_MIGRATIONS.map((m) => m.version));
      expect(await stores[0]!.schemaVersion()).toBe(stores[0]!.expectedSchemaVersion);
      await stores[1]!.insertTasks({ tasks: [newTask()] });
      expect(await stores[2]!.claimTasks(claimParams())).toHaveLength(1);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('refuses to run on a schema newer than it knows', async () => {
    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 });
    try {
      await store.migrate();
      await schema.query(`INSERT INTO "${schema.name}".tasklease_migrations (version, name) VALUES (999, 'from the future')`);
      const error = await store.migrate().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TaskLeaseError);
      expect((error as TaskLeaseError).code).toBe(ErrorCode.SCHEMA_MISMATCH);
      await schema.query(`DELETE FROM "${schema.name}".tasklease_migrations WHERE version = 999`);
    } finally {
      await store.close();
    }
  });

  it('works in a mixed-case schema whose name is also a keyword-like word', async () => {
    const mixed = await createTestSchema(`Select_${uniqueSchemaName()}`);
    schemas.push(mixed);
    const store = new PostgresStore({ connectionString: PG_URL, schema: mixed.name, poolSize: 2 });
    try {
      await store.migrate();
      await store.insertTasks({ tasks: [newTask(), newTask()] });
      const [task] = await store.claimTasks(claimParams({ limit: 1 }));
      await store.finishAttempts({
        outcomes: [
          {
            kind: 'SUCCESS',
            lease: { taskId: task!.id, workerId: 'w1', attempt: 1, token: task!.leaseToken! },
            artifactId: null,
            resultJson: '1',
            progress: null,
          },
        ],
      });
      expect((await store.countByStatus({ scope: Scope.global() })).SUCCESS).toBe(1);
      expect(await store.recover({ batchSize: 10 })).toMatchObject({ requeued: 0 });
    } finally {
      await store.close();
    }
  });
});

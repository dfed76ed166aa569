import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { createServer } from '../../src/server/index.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { describeOnServer } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { CuttableProxy } from './proxy.js';
import { serverSuite } from './suite.js';

const available = await postgresAvailable('test/server/postgres.test.ts');

describeOnServer(available, 'PostgreSQL', 'HTTP server on postgres', () => {
  const schemas = new Map<PostgresStore, TestSchema>();
  serverSuite({
    async create() {
      const schema = await createTestSchema();
      const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 4 });
      await store.migrate();
      schemas.set(store, schema);
      return store;
    },
    twin: (store) => new PostgresStore({ connectionString: PG_URL, schema: (store as PostgresStore).schema, poolSize: 2 }),
    async destroy(store) {
      await store.close();
      await schemas.get(store as PostgresStore)?.drop();
    },
  });

  describe('probes while the database goes away and comes back', () => {
    let schema: TestSchema;
    const proxy = new CuttableProxy({ host: new URL(PG_URL).hostname, port: Number(new URL(PG_URL).port || 5432) });
    beforeAll(async () => {
      schema = await createTestSchema();
      await proxy.up();
    });
    afterAll(async () => {
      await proxy.down();
      await schema.drop();
    });

    it('readiness and health turn DOWN (503) while the database is unreachable, liveness stays UP, and all return', { timeout: 60_000 }, async () => {
      const url = new URL(PG_URL);
      url.host = `127.0.0.1:${proxy.port}`;
      const server = await createServer({
        databaseUrl: `${url.toString()}?schema=${schema.name}&poolSize=2`,
        migrate: true,
        port: 0,
        logger: false,
        healthDetails: 'always', // the token table is as unreachable as the rest: no credential could be checked
      });
      const base = await server.listen();
      const status = async (path: string) => (await fetch(`${base}${path}`)).status;
      try {
        expect(await status('/actuator/health/readiness')).toBe(200);
        await proxy.down();
        await waitFor(async () => (await status('/actuator/health/readiness')) === 503, 'readiness DOWN', 20_000);
        const health = (await (await fetch(`${base}/actuator/health`)).json()) as { status: string; details: { db: { error: string } } };
        expect(health.status).toBe('DOWN');
        expect(health.details.db.error).toMatch(/database unreachable/);
        expect(await status('/actuator/health/liveness')).toBe(200);
        expect(await status('/actuator/health/startup')).toBe(503);
        await proxy.up();
        await waitFor(async () => (await status('/actuator/health/readiness')) === 200, 'readiness UP again', 20_000);
        expect(await status('/actuator/health')).toBe(200);
      } finally {
        await server.close();
      }
    });
  });
});

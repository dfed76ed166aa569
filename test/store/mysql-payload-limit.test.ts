/**
 * F3 (issue 11): a payload over the server's max_allowed_packet is refused
 * as the permanent error it is (PAYLOAD_TOO_LARGE, naming the server's
 * limit), not as STORE_UNAVAILABLE, which reads as transient and was retried
 * over fresh connections. The limit is read at migrate(), and a client whose
 * maxPayloadBytes exceeds it has a warning to log. The shared server's
 * max_allowed_packet is read, never changed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { ErrorCode, ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-payload-limit.test.ts');
const big = defineTask({ type: 'big', execute: () => undefined });

describeOnServer(available, 'MySQL/MariaDB', "MySQL store: payloads over the server's max_allowed_packet", () => {
  let database: TestDatabase;
  let store: MysqlStore;
  let maxPacket: number;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = new MysqlStore({ uri: database.uri, poolSize: 2 });
    await store.migrate();
    maxPacket = Number((await database.query('SELECT @@max_allowed_packet AS n'))[0]!.n);
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('reports the server limit, and a warning when maxPayloadBytes exceeds it', async () => {
    const limit = await store.payloadLimit();
    expect(limit.bytes).toBeLessThan(maxPacket);
    expect(limit.bytes).toBeGreaterThan(maxPacket - 64 * 1024);
    expect(limit.source).toContain(`max_allowed_packet of MySQL at 127.0.0.1:3306/${database.name} is ${maxPacket} bytes`);
    const generous = createClient({ store, tasks: [big], maxPayloadBytes: 64 * 1024 * 1024 });
    expect(await generous.payloadLimitWarning()).toMatch(
      new RegExp(`^maxPayloadBytes is 67108864 bytes, but the database takes payloads of at most ${limit.bytes} bytes`),
    );
    expect(await createClient({ store, tasks: [big] }).payloadLimitWarning()).toBeNull();
  });

  it('refuses a payload just over the limit with PAYLOAD_TOO_LARGE naming it, writes nothing and keeps its connections', async () => {
    const client = createClient({ store, tasks: [big], maxPayloadBytes: 64 * 1024 * 1024 });
    const before = { ...store.db.retries };
    const error = await client.submit(big, { s: 'x'.repeat(maxPacket) }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: ErrorCode.PAYLOAD_TOO_LARGE, message: expect.stringContaining(`is ${maxPacket} bytes: raise it on the server`) });
    expect(store.db.retries).toEqual(before);
    expect((await store.listTasks({ scope: Scope.global(), limit: 10 })).tasks).toEqual([]);
    expect((await client.submit(big, { s: 'small' })).created).toBe(true);
  });

  it('stores a payload that fits under the limit', async () => {
    const { bytes } = await store.payloadLimit();
    const [inserted] = await store.insertTasks({ tasks: [newTask({ payloadJson: JSON.stringify('x'.repeat(bytes - 100)) })] });
    expect((await store.getTask({ id: inserted!.task.id, scope: Scope.global() }))?.payload).toHaveLength(bytes - 100);
  });

  it('maps a statement the server refuses for its size (a result too large) to PAYLOAD_TOO_LARGE, not STORE_UNAVAILABLE', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'result' })] });
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['result'], limit: 1 }));
    const before = { ...store.leaseDb.retries };
    const resultJson = JSON.stringify('r'.repeat(maxPacket));
    const error = await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(task!), artifactId: null, resultJson, progress: null }] }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: ErrorCode.PAYLOAD_TOO_LARGE, message: expect.stringContaining('max_allowed_packet') });
    expect(store.leaseDb.retries).toEqual(before);
    expect((await store.getTask({ id: task!.id, scope: Scope.global() }))?.status).toBe('RUNNING');
  });
});

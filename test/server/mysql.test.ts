/** A smoke run on MariaDB/MySQL: the main user, admin, token and probe routes over real sockets. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { ADMIN_PREFIX } from '../../src/server/admin-routes.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { describeOnServer } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { startTestServer, type Running } from './harness.js';
import { nullPolicyFieldsStayNull } from './suite.js';

const available = await mysqlAvailable('test/server/mysql.test.ts');

describeOnServer(available, 'MySQL/MariaDB', 'HTTP server on mysql (smoke)', () => {
  let database: TestDatabase;
  let store: MysqlStore;
  let running: Running;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = new MysqlStore({ uri: database.uri, poolSize: 4 });
    await store.migrate();
    running = await startTestServer(store);
  });
  afterAll(async () => {
    await running?.close();
    await store?.close();
    await database?.drop();
  });

  it('submits, reads, lists, controls, runs and probes; tokens are checked, revoked and refused', { timeout: 60_000 }, async () => {
    const submitted = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.idle', payload: { n: 1 }, delayMs: 3_600_000 } });
    expect(submitted.status).toBe(202);
    const id = submitted.body.task.id;
    expect((await running.call('GET', `/api/v1/tasks/${id}`, { as: 'alice' })).body.owner).toBe('alice');
    expect((await running.call('GET', `/api/v1/tasks/${id}`, { as: 'bob' })).status).toBe(404);
    expect((await running.call('GET', '/api/v1/tasks?status=QUEUED', { as: 'alice' })).body.tasks.map((t: { id: string }) => t.id)).toEqual([id]);
    expect((await running.call('POST', `${ADMIN_PREFIX}/${id}/pause`, { as: 'operator' })).body).toEqual({
      success: true,
      code: 'OK',
      message: 'OK',
      data: null,
    });
    expect((await running.call('POST', `${ADMIN_PREFIX}/${id}/resume`, { as: 'alice' })).status).toBe(403);
    expect((await running.call('POST', `${ADMIN_PREFIX}/${id}/resume`, { as: 'admin' })).status).toBe(200);
    const now = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.idle', payload: {} } });
    await waitFor(async () => (await running.call('GET', `/api/v1/tasks/${now.body.task.id}`, { as: 'alice' })).body.status === 'SUCCESS', 'the task ran');
    const anonymous = await running.call('GET', '/actuator/health/readiness');
    expect([anonymous.status, anonymous.body]).toEqual([200, { status: 'UP' }]);
    expect((await running.call('GET', '/actuator/health/readiness', { as: 'operator' })).body.details.db).toMatchObject({ status: 'UP' });
    // the seed's pool look-up answers on MariaDB too (it read pg.Pool's counters only)
    const active = await running.call('GET', '/actuator/metrics/hikaricp.connections.active', { as: 'operator' });
    expect([active.status, active.body.measurements[0].value]).toEqual([200, expect.any(Number)]);
    expect((await running.call('GET', '/actuator/metrics/hikaricp.connections.max', { as: 'operator' })).body.measurements[0].value).toBe(4);
    const made = await running.call('POST', `${ADMIN_PREFIX}/tokens`, { as: 'admin', body: { name: 'mysql', role: 'operator', expiresInDays: 1 } });
    expect((await running.call('GET', `${ADMIN_PREFIX}/workers`, { token: made.body.data.token })).body.data.length).toBe(1);
    await running.call('DELETE', `${ADMIN_PREFIX}/tokens/${made.body.data.record.id}`, { as: 'admin' });
    expect((await running.call('GET', `${ADMIN_PREFIX}/workers`, { token: made.body.data.token })).status).toBe(401);
    const tokens = await running.call('GET', `${ADMIN_PREFIX}/tokens`, { as: 'admin' });
    expect(tokens.body.data.find((t: { id: string }) => t.id === made.body.data.record.id).revokedAt).not.toBeNull();
  });

  it('a null policy field means the default on PUT: stored and answered as null, never 0', () => nullPolicyFieldsStayNull(running));

  it('a dashboard session is a row of its own: its cookie works until logout, then never again', async () => {
    const login = await running.call('POST', '/api/v1/session', { body: { token: running.tokens.operator }, headers: { origin: running.url } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).toMatch(/^tasklease_session=tls_/);
    expect((await running.call('GET', '/api/v1/tasks', { headers: { cookie } })).status).toBe(200);
    expect((await running.call('DELETE', '/api/v1/session', { headers: { cookie, origin: running.url } })).status).toBe(200);
    expect((await running.call('GET', '/api/v1/tasks', { headers: { cookie } })).status).toBe(401);
  });
});

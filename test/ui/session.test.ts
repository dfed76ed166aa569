/**
 * The dashboard's server side without a browser: the login session cookie
 * and its origin check, the cluster stats route, and the static files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { failedTask, startTestServer, type Running } from '../server/harness.js';

let store: Store;
let running: Running;
beforeAll(async () => {
  store = await sqliteFactory.create();
  running = await startTestServer(store);
});
afterAll(async () => {
  await running?.close();
  if (store) await sqliteFactory.destroy(store);
});

/** A login as the dashboard sends it (a browser adds Origin to a POST). */
function logInAnswer(token: string) {
  return running.call('POST', '/api/v1/session', { body: { token }, headers: { origin: running.url } });
}

async function logIn(token: string): Promise<string> {
  const answer = await logInAnswer(token);
  expect(answer.status).toBe(200);
  return answer.headers.get('set-cookie')!.split(';')[0]!;
}

const logOut = (cookie: string) => running.call('DELETE', '/api/v1/session', { headers: { cookie, origin: running.url } });

const HOUR = 3_600_000;

describe('login session', () => {
  it('sets an HttpOnly, SameSite=Strict cookie holding a session id (not the token) for a valid token, and none for a bad one', async () => {
    const bad = await logInAnswer('tl_nope');
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('UNAUTHENTICATED');
    expect(bad.headers.get('set-cookie')).toBeNull();
    const good = await logInAnswer(running.tokens.alice);
    expect(good.body).toEqual({ role: 'user', owner: 'alice', name: 'test alice' });
    const cookie = good.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^tasklease_session=tls_[A-Za-z0-9_-]{43};/);
    expect(cookie).not.toContain(running.tokens.alice.slice(3));
    for (const attribute of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']) expect(cookie).toContain(attribute);
    expect(cookie).not.toContain('Secure'); // plain http: a Secure cookie would be dropped
    // The session id is no API token: as a Bearer credential it is refused.
    const sessionId = cookie.split(';')[0]!.slice('tasklease_session='.length);
    expect((await running.call('GET', '/api/v1/session', { token: sessionId })).status).toBe(401);
  });

  it('a session lasts no longer than the token it was started with', async () => {
    const { token } = await running.server.client.tokens.create({ name: 'one hour', role: 'operator', expiresInMs: HOUR });
    const answer = await logInAnswer(token);
    const maxAge = Number(/Max-Age=(\d+)/.exec(answer.headers.get('set-cookie')!)![1]);
    expect(maxAge).toBeGreaterThan(3500);
    expect(maxAge).toBeLessThanOrEqual(3600);
    const { id } = (await running.server.client.tokens.list()).find((t) => t.name === 'one hour')!;
    const session = (await running.server.client.tokens.list()).find((t) => t.name === `session ${id}: one hour`)!;
    expect(session.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + HOUR);
  });

  it('the cookie authenticates like the token, scoped to its owner', async () => {
    const cookie = await logIn(running.tokens.alice);
    expect((await running.call('GET', '/api/v1/session', { headers: { cookie } })).body.role).toBe('user');
    const bobs = (await running.server.client.submit('test.idle', {}, { owner: 'bob', delayMs: HOUR })).task;
    expect((await running.call('GET', `/api/v1/tasks/${bobs.id}`, { headers: { cookie } })).status).toBe(404);
    expect((await running.call('GET', '/api/admin/async-task/stats', { headers: { cookie } })).status).toBe(403);
    expect((await running.call('GET', '/api/v1/session')).status).toBe(401);
  });

  it('a state-changing request with the cookie needs Sec-Fetch-Site: same-origin, or no Sec-Fetch-Site and this Origin', async () => {
    const cookie = await logIn(running.tokens.admin);
    const task = (await running.server.client.submit('test.idle', {}, { delayMs: HOUR })).task;
    const cancel = (headers: Record<string, string>) => running.call('POST', `/api/v1/tasks/${task.id}/cancel`, { headers: { cookie, ...headers } });
    const refusedHeaders: Record<string, string>[] = [
      {},
      { 'sec-fetch-site': 'none' },
      { 'sec-fetch-site': 'none', origin: running.url },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'cross-site', origin: running.url },
      { 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:1' },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'same-origin', origin: 'https://evil.example' },
    ];
    for (const headers of refusedHeaders) {
      const refused = await cancel(headers);
      expect([refused.status, JSON.stringify(headers)]).toEqual([403, JSON.stringify(headers)]);
      expect(refused.body).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/cross-site request refused/) });
      expect(refused.headers.get('x-content-type-options')).toBe('nosniff');
      expect(refused.headers.get('content-security-policy')).toBeTruthy();
    }
    expect((await running.server.client.get(task.id))?.status).toBe('QUEUED');
    // Reads need no proof of origin; a Bearer header is no ambient credential and needs none either.
    expect((await running.call('GET', `/api/v1/tasks/${task.id}`, { headers: { cookie } })).status).toBe(200);
    const other = (await running.server.client.submit('test.idle', {}, { delayMs: HOUR })).task;
    expect((await running.call('POST', `/api/v1/tasks/${other.id}/cancel`, { as: 'admin' })).status).toBe(200);
    const accepted: Record<string, string>[] = [
      { 'sec-fetch-site': 'same-origin' },
      { origin: running.url },
      { origin: running.url, 'sec-fetch-site': 'same-origin' },
    ];
    for (const headers of accepted) {
      const { task: fresh } = await running.server.client.submit('test.idle', {}, { delayMs: HOUR });
      const answer = await running.call('POST', `/api/v1/tasks/${fresh.id}/cancel`, { headers: { cookie, ...headers } });
      expect([answer.status, JSON.stringify(headers)]).toEqual([200, JSON.stringify(headers)]);
    }
    expect((await cancel({ origin: running.url, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await running.server.client.get(task.id))?.status).toBe('CANCELLED');
  });

  it('refuses a login without proof of origin or from another site', async () => {
    const refusedHeaders: Record<string, string>[] = [{}, { origin: 'https://evil.example' }, { 'sec-fetch-site': 'none' }, { 'sec-fetch-site': 'cross-site' }];
    for (const headers of refusedHeaders) {
      const refused = await running.call('POST', '/api/v1/session', { body: { token: running.tokens.admin }, headers });
      expect([refused.status, refused.headers.get('set-cookie')]).toEqual([403, null]);
    }
  });

  it('logout ends the session on the server: the old cookie no longer works, even replayed', async () => {
    const cookie = await logIn(running.tokens.operator);
    expect((await running.call('GET', '/api/v1/tasks', { headers: { cookie } })).status).toBe(200);
    const out = await logOut(cookie);
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^tasklease_session=; .*Max-Age=0/);
    const replayed = await running.call('GET', '/api/v1/tasks', { headers: { cookie } });
    expect([replayed.status, replayed.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await logOut(cookie)).status).toBe(200); // logging out twice is harmless
    expect((await running.call('DELETE', '/api/v1/session', { headers: { cookie } })).status).toBe(403); // no proof of origin
  });

  it('revoking the token ends its sessions at once; revoking a session ends only that one', async () => {
    const { token, record } = await running.server.client.tokens.create({ name: 'short-lived', role: 'operator' });
    const [first, second] = [await logIn(token), await logIn(token)];
    const sessions = (await running.server.client.tokens.list()).filter((t) => t.name === `session ${record.id}: short-lived`);
    expect(sessions).toHaveLength(2);
    await running.server.client.tokens.revoke(sessions.find((s) => s.revokedAt === null)!.id);
    const alive = async (cookie: string) => (await running.call('GET', '/api/v1/tasks', { headers: { cookie } })).status === 200;
    expect([await alive(first), await alive(second)].sort()).toEqual([false, true]);
    await running.server.client.tokens.revoke(record.id);
    expect([await alive(first), await alive(second)]).toEqual([false, false]);
    // Ended sessions leave the token list; the revoked token itself stays listed.
    const listed = (await running.server.client.tokens.list()).filter((t) => t.name.endsWith('short-lived'));
    expect(listed.map((t) => t.name)).toEqual(['short-lived']);
  });
});

describe('stats route', () => {
  it('reports counts, backlog, limits in use, dead letters and workers from the database', async () => {
    const client = running.server.client;
    await client.policies.update('test.idle', { maxConcurrency: 3 });
    await client.submitMany([1, 2, 3].map((n) => ({ type: 'test.idle', payload: { n }, delayMs: HOUR })));
    await failedTask(running);
    const answer = await running.call('GET', '/api/admin/async-task/stats', { as: 'operator' });
    expect(answer.status).toBe(200);
    const stats = answer.body.data;
    const count = async (status: 'QUEUED' | 'RETRY_WAIT') => (await client.list({ status, limit: 1000 })).tasks.length;
    expect(stats.counts.QUEUED).toBe(await count('QUEUED'));
    expect(stats.counts.QUEUED).toBeGreaterThanOrEqual(3);
    expect(stats.backlog).toBe((await count('QUEUED')) + (await count('RETRY_WAIT')));
    expect(stats.deadLetters).toBe(await client.deadLetters.size());
    expect(stats.deadLetters).toBeGreaterThanOrEqual(1);
    expect(stats.types.find((t: { taskType: string }) => t.taskType === 'test.idle')).toMatchObject({ limit: 3, enabled: true });
    expect(stats.global).toMatchObject({ limit: 20, enabled: true });
    expect(stats.workers).toEqual({ live: 1, concurrency: 8 });
    expect(stats.queueWait).toMatchObject({ count: expect.any(Number), p50Ms: expect.any(Number), p99Ms: expect.any(Number) });
    expect(stats.queueWait.p99Ms).toBeGreaterThanOrEqual(stats.queueWait.p50Ms);
  });
});

describe('static files', () => {
  it('serves the built dashboard under /ui with its CSP, and nothing outside the build', async () => {
    const index = await running.call('GET', '/ui/');
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/text\/html/);
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const script = /src="\/ui\/(assets\/[^"]+\.js)"/.exec(index.text)![1]!;
    const asset = await running.call('GET', `/ui/${script}`);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    for (const path of ['/ui/nope.js', '/ui/..%2fpackage.json', '/ui/%2e%2e/%2e%2e/package.json']) expect((await running.call('GET', path)).status).toBe(404);
  });
});

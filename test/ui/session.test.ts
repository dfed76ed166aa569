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

async function logIn(token: string): Promise<string> {
  const answer = await running.call('POST', '/api/v1/session', { body: { token } });
  expect(answer.status).toBe(200);
  return answer.headers.get('set-cookie')!.split(';')[0]!;
}

const HOUR = 3_600_000;

describe('login session', () => {
  it('sets an HttpOnly, SameSite=Strict cookie for a valid token and none for a bad one', async () => {
    const bad = await running.call('POST', '/api/v1/session', { body: { token: 'tl_nope' } });
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('UNAUTHENTICATED');
    expect(bad.headers.get('set-cookie')).toBeNull();
    const good = await running.call('POST', '/api/v1/session', { body: { token: running.tokens.alice } });
    expect(good.body).toEqual({ role: 'user', owner: 'alice', name: 'test alice' });
    const cookie = good.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^tasklease_session=tl_/);
    for (const attribute of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']) expect(cookie).toContain(attribute);
    expect(cookie).not.toContain('Secure'); // plain http: a Secure cookie would be dropped
  });

  it('the cookie authenticates like the token, scoped to its owner', async () => {
    const cookie = await logIn(running.tokens.alice);
    expect((await running.call('GET', '/api/v1/session', { headers: { cookie } })).body.role).toBe('user');
    const bobs = (await running.server.client.submit('test.idle', {}, { owner: 'bob', delayMs: HOUR })).task;
    expect((await running.call('GET', `/api/v1/tasks/${bobs.id}`, { headers: { cookie } })).status).toBe(404);
    expect((await running.call('GET', '/api/admin/async-task/stats', { headers: { cookie } })).status).toBe(403);
    expect((await running.call('GET', '/api/v1/session')).status).toBe(401);
  });

  it('refuses a state-changing request with the cookie from another origin, accepts it from its own', async () => {
    const cookie = await logIn(running.tokens.admin);
    const task = (await running.server.client.submit('test.idle', {}, { delayMs: HOUR })).task;
    const cancel = (headers: Record<string, string>) => running.call('POST', `/api/v1/tasks/${task.id}/cancel`, { headers: { cookie, ...headers } });
    const crossSite: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:1' },
    ];
    for (const headers of crossSite) {
      const refused = await cancel(headers);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/cross-site request refused/) });
    }
    expect((await running.server.client.get(task.id))?.status).toBe('QUEUED');
    expect((await cancel({ origin: running.url, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await running.server.client.get(task.id))?.status).toBe('CANCELLED');
  });

  it('refuses a cross-site login, ends the session on logout, and on revoke at once', async () => {
    const crossSite = await running.call('POST', '/api/v1/session', { body: { token: running.tokens.admin }, headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    const out = await running.call('DELETE', '/api/v1/session');
    expect(out.headers.get('set-cookie')).toMatch(/^tasklease_session=; .*Max-Age=0/);
    const { token, record } = await running.server.client.tokens.create({ name: 'short-lived', role: 'operator' });
    const cookie = await logIn(token);
    expect((await running.call('GET', '/api/v1/tasks', { headers: { cookie } })).status).toBe(200);
    await running.server.client.tokens.revoke(record.id);
    expect((await running.call('GET', '/api/v1/tasks', { headers: { cookie } })).status).toBe(401);
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

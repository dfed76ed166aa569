/**
 * The HTTP suite, run on every dialect's store: the authorization matrix
 * generated from the server's own route rules, live streams, hostile input
 * and tokens. Real sockets throughout (fetch against a listening server).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../../src/server/index.js';
import { ROLES_BY_ACCESS } from '../../src/server/routes.js';
import { ADMIN_PREFIX } from '../../src/server/admin-routes.js';
import { emptyCounts, historyStoreOf } from '../../src/store/queue-history.js';
import type { Store } from '../../src/store/types.js';
import { aliceTask, exampleFor, type ExampleRequest } from './matrix.js';
import { waitFor } from '../helpers/wait.js';
import { failedTask, gate, sseEvents, startTestServer, type Answer, type Role, type Running } from './harness.js';

export interface ServerSuiteStores {
  create(): Promise<Store>;
  /** A second store on the same database (another process's view). */
  twin(store: Store): Store;
  destroy(store: Store): Promise<void>;
}

const ROLE_OF: Record<Role, 'admin' | 'operator' | 'user'> = { admin: 'admin', operator: 'operator', alice: 'user', bob: 'user' };

async function send(running: Running, request: ExampleRequest, as: Role | null): Promise<Answer> {
  if (!request.stream)
    return running.call(request.method, request.path, {
      as,
      ...(request.body !== undefined ? { body: request.body } : {}),
      ...(request.headers ? { headers: request.headers } : {}),
    });
  const abort = new AbortController();
  const response = await fetch(`${running.url}${request.path}`, { headers: as ? { authorization: `Bearer ${running.tokens[as]}` } : {}, signal: abort.signal });
  const answer: Answer = { status: response.status, headers: response.headers, body: null, text: '' };
  if (response.status !== 200) {
    answer.text = await response.text();
    answer.body = JSON.parse(answer.text || 'null');
  }
  abort.abort();
  return answer;
}

export function serverSuite(stores: ServerSuiteStores): void {
  let store: Store;
  let running: Running;
  beforeAll(async () => {
    store = await stores.create();
    running = await startTestServer(store, { bodyLimitBytes: 512 * 1024 });
  });
  afterAll(async () => {
    await running?.close();
    if (store) await stores.destroy(store);
  });

  describe('authorization', () => {
    it('every registered route has an access rule and a matrix example', () => {
      const missing = running.server.app.routeRules.filter((rule) => !exampleFor(rule.method, rule.url)).map((r) => `${r.method} ${r.url}`);
      expect(missing).toEqual([]);
      expect(running.server.app.routeRules.length).toBeGreaterThan(40);
    });

    it('refuses a route added without an access rule', async () => {
      const bare = await createServer({ store, logger: false });
      expect(() => bare.app.get('/unruled', async () => 'open')).toThrow(/no access rule/);
      await bare.close();
    });

    it(
      "each role × each route: 401 without a token, 403 for the wrong role, 404 for another owner's task, 2xx for the right one",
      { timeout: 120_000 },
      async () => {
        const failures: string[] = [];
        const expectStatus = (label: string, answer: Answer, ok: (status: number) => boolean, want: string): void => {
          if (!ok(answer.status)) failures.push(`${label}: got ${answer.status}, want ${want} (${answer.text.slice(0, 160)})`);
        };
        for (const rule of running.server.app.routeRules) {
          const build = exampleFor(rule.method, rule.url)!;
          const name = `${rule.method} ${rule.url}`;
          if (rule.access === 'public') {
            const open = await send(running, await build(running), null);
            expectStatus(`${name} without a token`, open, (s) => s >= 200 && s < 300, '2xx');
            // A probe tells an anonymous caller its status and nothing else (healthDetails: when-authorized).
            if (rule.url.startsWith('/actuator/health') && JSON.stringify(Object.keys(open.body ?? {})) !== '["status"]')
              failures.push(`${name} without a token shows ${open.text.slice(0, 120)}`);
            continue;
          }
          const unauthenticated = await send(running, await build(running), null);
          expectStatus(`${name} without a token`, unauthenticated, (s) => s === 401, '401');
          if (unauthenticated.status === 401 && unauthenticated.body?.code !== 'UNAUTHENTICATED') failures.push(`${name}: 401 without code UNAUTHENTICATED`);
          for (const role of ['admin', 'operator', 'alice'] as const) {
            const allowed = ROLES_BY_ACCESS[rule.access].includes(ROLE_OF[role]);
            const answer = await send(running, await build(running), role);
            expectStatus(`${name} as ${role}`, answer, allowed ? (s) => s >= 200 && s < 300 : (s) => s === 403, allowed ? '2xx' : '403');
            // A user's view of a task holds neither the lease's owner (a worker's host and pid) nor its token.
            if (role === 'alice' && /"lease(Owner|Token)"/.test(answer.text)) failures.push(`${name} as alice shows a lease owner or token`);
          }
          if (rule.ownTask) {
            const request = await build(running);
            const foreign = await send(running, request, 'bob');
            const id = /[0-9a-f-]{36}/.exec(request.path)![0];
            const missing = await send(running, { ...request, path: request.path.replace(id, randomUUID()) }, 'bob');
            expectStatus(`${name} as bob on alice's task`, foreign, (s) => s === 404, '404');
            const shape = (a: Answer) => JSON.stringify({ ...a.body, requestId: null, message: String(a.body?.message).replace(/[0-9a-f-]{36}/, 'ID') });
            if (shape(foreign) !== shape(missing)) failures.push(`${name}: another owner's task answers ${shape(foreign)}, a missing one ${shape(missing)}`);
          }
        }
        expect(failures).toEqual([]);
      },
    );

    it('a user submits for its own owner only and lists only its own tasks', async () => {
      const forged = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.idle', payload: {}, owner: 'bob' } });
      expect(forged.status).toBe(403);
      expect(forged.body).toMatchObject({ success: false, code: 'FORBIDDEN' });
      const own = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.idle', payload: {}, delayMs: 3_600_000 } });
      expect(own.body.task.owner).toBe('alice');
      await running.server.client.submit('test.idle', {}, { owner: 'bob', delayMs: 3_600_000 });
      const listed = await running.call('GET', '/api/v1/tasks?limit=1000', { as: 'alice' });
      expect(listed.body.tasks.length).toBeGreaterThan(0);
      expect(listed.body.tasks.every((t: { owner: string }) => t.owner === 'alice')).toBe(true);
      // The status counts (the dashboard's tabs) are in the same scope: alice's equal her listed tasks, an admin's all.
      const counted = await running.call('GET', '/api/v1/tasks/counts?type=test.idle', { as: 'alice' });
      const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
      const alices = listed.body.tasks.filter((t: { taskType: string }) => t.taskType === 'test.idle').length;
      expect(sum(counted.body.counts)).toBe(alices);
      expect(sum((await running.call('GET', '/api/v1/tasks/counts?type=test.idle', { as: 'admin' })).body.counts)).toBe(
        sum(await running.server.client.counts({ taskType: 'test.idle' })),
      );
      expect(sum(await running.server.client.counts({ taskType: 'test.idle' }))).toBeGreaterThan(alices);
      expect((await running.call('GET', '/api/v1/tasks/counts?color=red', { as: 'alice' })).status).toBe(400);
    });

    it("a user's sequence keys start with its owner: another tenant's key is refused, its own key waits in order", async () => {
      const foreign = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.idle', payload: {}, sequenceKey: 'bob:ledger' } });
      expect(foreign.status).toBe(403);
      expect(foreign.body).toMatchObject({ success: false, code: 'FORBIDDEN' });
      const body = { type: 'test.idle', payload: {}, delayMs: 3_600_000, sequenceKey: 'alice:ledger' };
      const first = await running.call('POST', '/api/v1/tasks', { as: 'alice', body });
      const second = await running.call('POST', '/api/v1/tasks', { as: 'alice', body });
      expect([first.body.task.status, second.body.task.status]).toEqual(['QUEUED', 'BLOCKED']);
      const key = await running.call('GET', '/api/v1/sequences/alice:ledger', { as: 'alice' });
      expect(key.body).toMatchObject({ sequenceKey: 'alice:ledger', waiting: 1, blocked: false, head: { id: first.body.task.id } });
      expect((await running.call('GET', '/api/v1/sequences/alice:ledger', { as: 'bob' })).status).toBe(404);
    });
  });

  describe('the user API', () => {
    it('bulk: a dry run counts, a start answers 202 and its events follow it to the end; a user’s operation touches its own tasks only', async () => {
      const client = running.server.client;
      const type = 'test.idle';
      const tag = randomUUID();
      const mine = await client.submitMany([0, 1, 2].map((i) => ({ type, payload: { tag, i }, owner: 'alice', delayMs: 3_600_000 })));
      const theirs = await client.submit(type, { tag, i: 9 }, { owner: 'bob', delayMs: 3_600_000 });
      const filter = { type, payload: [`tag=${tag}`] };
      const dry = await running.call('POST', '/api/v1/bulk/pause', { as: 'alice', body: { filter, dryRun: true } });
      expect(dry.status).toBe(200);
      expect(dry.body).toMatchObject({ dryRun: true, action: 'pause', matched: 3 });
      expect((await running.call('POST', '/api/v1/bulk/pause', { as: 'operator', body: { filter, dryRun: true } })).body.matched).toBe(4);
      expect((await client.get(mine[0]!.task.id))!.status).toBe('QUEUED'); // the dry run wrote nothing
      const refused = await running.call('POST', '/api/v1/bulk/pause', { as: 'alice', body: { filter: { ...filter, owner: 'bob' } } });
      expect(refused.status).toBe(400);
      const started = await running.call('POST', '/api/v1/bulk/pause', { as: 'alice', body: { filter, batchSize: 1 } });
      expect(started.status).toBe(202);
      const op = started.body.operation as { id: string; owner: string; matched: number; actor: { id: string } };
      expect(op).toMatchObject({ owner: 'alice', matched: 3, status: 'RUNNING' });
      const response = await fetch(`${running.url}/api/v1/bulk/${op.id}/events`, { headers: { authorization: `Bearer ${running.tokens.alice}` } });
      const stream = sseEvents(response);
      const end = await readUntil(stream, (e) => e.event === 'end');
      expect(end.data).toEqual({ id: op.id, status: 'SUCCEEDED' });
      const after = await running.call('GET', `/api/v1/bulk/${op.id}`, { as: 'alice' });
      expect(after.body).toMatchObject({ status: 'SUCCEEDED', processed: 3, changed: 3 });
      for (const { task } of mine) expect((await client.get(task.id))!.status).toBe('PAUSED');
      expect((await client.get(theirs.task.id))!.status).toBe('QUEUED');
      expect((await client.actions(mine[0]!.task.id))[0]).toMatchObject({ action: 'PAUSE', actor: op.actor.id, detail: `bulk ${op.id}` });
      // The audit: who, when, the filter, the count — to its owner and operators; not to another user.
      const listed = await running.call('GET', '/api/v1/bulk', { as: 'operator' });
      expect(listed.body.operations[0]).toMatchObject({ id: op.id, action: 'pause', filter: { taskType: type }, matched: 3 });
      expect((await running.call('GET', '/api/v1/bulk', { as: 'bob' })).body.operations.some((o: { id: string }) => o.id === op.id)).toBe(false);
      expect((await running.call('GET', `/api/v1/bulk/${op.id}`, { as: 'bob' })).status).toBe(404);
      // Retry in bulk is an operator's, as on one task.
      expect((await running.call('POST', '/api/v1/bulk/retry', { as: 'alice', body: { filter: {} } })).status).toBe(403);
    });

    it('GET …/stats/history: the queue history by range or from/to/step, of one type; 400 for a bad range, 403 for a user', async () => {
      const store = running.server.store;
      const minute = Math.floor((await store.now()).getTime() / 60_000) * 60_000 - 120_000;
      const type = `test.history.${randomUUID()}`;
      await (
        await historyStoreOf(store)
      ).add('srv-p', [{ minuteStart: new Date(minute), taskType: type, counts: { ...emptyCounts(), submitted: 7, deadLettered: 1 } }]);
      const path = `${ADMIN_PREFIX}/stats/history`;
      const hour = await running.call('GET', `${path}?range=1h&taskType=${encodeURIComponent(type)}`, { as: 'operator' });
      expect(hour.status).toBe(200);
      expect(hour.body.data).toMatchObject({ taskType: type, step: 'minute' });
      expect(hour.body.data.points.find((p: { at: string }) => p.at === new Date(minute).toISOString())).toMatchObject({ submitted: 7, deadLettered: 1 });
      const week = await running.call('GET', `${path}?range=7d&taskType=${encodeURIComponent(type)}`, { as: 'operator' });
      expect(week.body.data.step).toBe('hour');
      expect(week.body.data.points.reduce((sum: number, p: { submitted: number }) => sum + p.submitted, 0)).toBe(7);
      const from = new Date(minute).toISOString();
      const to = new Date(minute + 60_000).toISOString();
      const exact = await running.call('GET', `${path}?from=${from}&to=${to}&step=minute&taskType=${encodeURIComponent(type)}`, { as: 'operator' });
      expect(exact.body.data.points).toMatchObject([{ at: from, submitted: 7 }]);
      expect((await running.call('GET', `${path}?range=2d`, { as: 'operator' })).status).toBe(400);
      expect((await running.call('GET', `${path}?from=${to}&to=${from}`, { as: 'operator' })).status).toBe(400);
      expect((await running.call('GET', path, { as: 'alice' })).status).toBe(403);
    });

    it('PATCH edits a waiting task: the fields and their history; 409 once it changed or ended; 400 for a field it does not know', async () => {
      const deadlineAt = new Date(Date.now() + 7_200_000);
      const { task } = await running.server.client.submit('test.idle', { n: 1 }, { owner: 'alice', delayMs: 3_600_000, deadlineAt });
      const path = `/api/v1/tasks/${task.id}`;
      const edited = await running.call('PATCH', path, {
        as: 'alice',
        body: { payload: { n: 2 }, priority: 9, deadlineAt: null, expectUpdatedAt: task.updatedAt.toISOString() },
      });
      expect(edited.status).toBe(200);
      expect(edited.body).toMatchObject({ id: task.id, status: 'QUEUED', payload: { n: 2 }, priority: 9, deadlineAt: null });
      const stale = await running.call('PATCH', path, { as: 'operator', body: { priority: 1, expectUpdatedAt: task.updatedAt.toISOString() } });
      expect([stale.status, stale.body.code]).toEqual([409, 'TASK_CHANGED']);
      for (const body of [{}, { status: 'RUNNING' }, { priority: 5000 }])
        expect((await running.call('PATCH', path, { as: 'operator', body })).status).toBe(400);
      const actions = await running.call('GET', `${path}/actions`, { as: 'alice' });
      expect(actions.body.actions).toMatchObject([{ action: 'EDIT', detail: 'payload,priority,deadlineAt', fromStatus: 'QUEUED', toStatus: 'QUEUED' }]);
      await running.server.client.requestCancellation(task.id);
      const ended = await running.call('PATCH', path, { as: 'operator', body: { priority: 2 } });
      expect([ended.status, ended.body.code]).toEqual([409, 'INVALID_TRANSITION']);
    });

    it('pages with a cursor and filters by type, status and creation time', async () => {
      const before = new Date(Date.now() - 1);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await aliceTask(running));
      const first = await running.call('GET', `/api/v1/tasks?type=test.idle&status=QUEUED,PAUSED&createdAfter=${before.toISOString()}&limit=2`, {
        as: 'alice',
      });
      expect(first.status).toBe(200);
      expect(first.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
      const second = await running.call('GET', `/api/v1/tasks?type=test.idle&createdAfter=${before.toISOString()}&limit=2&cursor=${first.body.nextCursor}`, {
        as: 'alice',
      });
      expect(second.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[0]]);
      expect(second.body.nextCursor).toBeNull();
    });

    it("finds a user's own task by idempotency key, never another owner's with the same key", async () => {
      const key = `search-${Date.now()}`;
      const own = await running.call('POST', '/api/v1/tasks', {
        as: 'alice',
        body: { type: 'test.idle', payload: {}, idempotencyKey: key, delayMs: 3_600_000 },
      });
      const bobs = await running.server.client.submit('test.idle', {}, { owner: 'bob', idempotencyKey: key, delayMs: 3_600_000 });
      const found = await running.call('GET', `/api/v1/tasks?idempotencyKey=${encodeURIComponent(key)}`, { as: 'alice' });
      expect(found.status).toBe(200);
      expect(found.body.tasks.map((t: { id: string }) => t.id)).toEqual([own.body.task.id]);
      const admin = await running.call('GET', `/api/v1/tasks?idempotencyKey=${encodeURIComponent(key)}`, { as: 'admin' });
      expect(admin.body.tasks.map((t: { id: string }) => t.id).sort()).toEqual([own.body.task.id, bobs.task.id].sort());
      const empty = await running.call('GET', '/api/v1/tasks?idempotencyKey=', { as: 'alice' });
      expect(empty.status).toBe(400);
    });

    it("searches by payload fields and key prefix, a user's own tasks only; bad paths answer 400 SEARCH_PATH_INVALID", async () => {
      const tag = `s${Date.now()}`;
      const post = async (payload: unknown, idempotencyKey: string): Promise<string> =>
        (await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.idle', payload, idempotencyKey, delayMs: 3_600_000 } })).body.task.id;
      const n42 = await post({ tag, order: { id: 42 }, customer: { name: 'Ada Lovelace' } }, `${tag}-inv_1`);
      const s42 = await post({ tag, order: { id: '42' }, customer: { name: 'Bob' } }, `${tag}-inv%2`);
      const bobs = await running.server.client.submit(
        'test.idle',
        { tag, order: { id: 42 } },
        { owner: 'bob', idempotencyKey: `${tag}-inv_3`, delayMs: 3_600_000 },
      );
      const ids = async (query: string, as: Role = 'alice'): Promise<string[]> => {
        const answer = await running.call('GET', `/api/v1/tasks?payload=${encodeURIComponent(`tag=${tag}`)}&${query}`, { as });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        return answer.body.tasks.map((t: { id: string }) => t.id).sort();
      };
      expect(await ids(`payload=${encodeURIComponent('order.id=42')}`)).toEqual([n42]);
      expect(await ids(`payload=${encodeURIComponent('order.id="42"')}`)).toEqual([s42]);
      expect(await ids(`payload=${encodeURIComponent('order.id=42')}`, 'admin')).toEqual([n42, bobs.task.id].sort());
      expect(await ids(`payloadPrefix=${encodeURIComponent('customer.name=Ada')}`)).toEqual([n42]);
      expect(await ids(`idempotencyKeyPrefix=${encodeURIComponent(`${tag}-inv_`)}`)).toEqual([n42]);
      expect(await ids(`idempotencyKeyPrefix=${encodeURIComponent(`${tag}-inv`)}`)).toEqual([n42, s42].sort());
      const bad = await running.call('GET', `/api/v1/tasks?payload=${encodeURIComponent("order'.id=1")}`, { as: 'alice' });
      expect([bad.status, bad.body.code]).toEqual([400, 'SEARCH_PATH_INVALID']);
      const noValue = await running.call('GET', `/api/v1/tasks?payload=${encodeURIComponent('order.id')}`, { as: 'alice' });
      expect([noValue.status, noValue.body.code]).toEqual([400, 'SEARCH_PATH_INVALID']);
    });

    it('long-polls a task until it ends, or answers finished: false after timeoutMs; another owner gets 404', async () => {
      const id = await aliceTask(running);
      const early = await running.call('GET', `/api/v1/tasks/${id}/wait?timeoutMs=50`, { as: 'alice' });
      expect(early.status).toBe(200);
      expect(early.body).toMatchObject({ finished: false, task: { id, status: 'QUEUED' } });
      const waiting = running.call('GET', `/api/v1/tasks/${id}/wait?timeoutMs=30000`, { as: 'alice' });
      await running.server.client.requestCancellation(id);
      expect((await waiting).body).toMatchObject({ finished: true, task: { id, status: 'CANCELLED' } });
      expect((await running.call('GET', `/api/v1/tasks/${id}/wait?timeoutMs=50`, { as: 'bob' })).status).toBe(404);
      expect((await running.call('GET', `/api/v1/tasks/${id}/wait?timeoutMs=0`, { as: 'alice' })).status).toBe(400);
    });

    it("reads a task's logs (ctx.log) in the owner's scope: fields redacted, by attempt, a bad limit is a typed 400, another owner 404", async () => {
      const { task } = await running.server.client.submit('test.logged', {}, { owner: 'alice' });
      await waitFor(async () => (await running.server.client.get(task.id))?.status === 'SUCCESS', 'the logged task to succeed');
      const answer = await running.call('GET', `/api/v1/tasks/${task.id}/logs`, { as: 'alice' });
      expect(answer.status).toBe(200);
      expect(
        answer.body.logs.map((l: { level: string; message: string; fields: unknown; attempt: number }) => [l.attempt, l.level, l.message, l.fields]),
      ).toEqual([
        [1, 'info', 'fetched page', { page: 1, token: '[REDACTED]' }],
        [1, 'warn', 'slow upstream', { ms: 900 }],
      ]);
      expect(typeof answer.body.logs[0].loggedAt).toBe('string');
      const paged = await running.call('GET', `/api/v1/tasks/${task.id}/logs?afterSeq=${answer.body.logs[0].seq}&attempt=1`, { as: 'operator' });
      expect(paged.body.logs.map((l: { message: string }) => l.message)).toEqual(['slow upstream']);
      expect((await running.call('GET', `/api/v1/tasks/${task.id}/logs?attempt=2`, { as: 'alice' })).body).toEqual({ logs: [] });
      expect((await running.call('GET', `/api/v1/tasks/${task.id}/logs?limit=0`, { as: 'alice' })).status).toBe(400);
      expect((await running.call('GET', `/api/v1/tasks/${task.id}/logs`, { as: 'bob' })).status).toBe(404);
    });

    it('submits with a unique option: the second submit answers the first task', async () => {
      const body = { type: 'test.idle', payload: {}, delayMs: 3_600_000, unique: { key: `u-${randomUUID()}` } };
      const first = await running.call('POST', '/api/v1/tasks', { as: 'alice', body });
      const second = await running.call('POST', '/api/v1/tasks', { as: 'alice', body });
      expect(first.body.created).toBe(true);
      expect(second.body).toMatchObject({ created: false, task: { id: first.body.task.id } });
      const bad = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { ...body, unique: { states: ['QUEUED'] } } });
      expect(bad.body).toMatchObject({ code: 'VALIDATION', field: 'unique.states' });
    });

    it('answers a wrong transition with 409 and the one error shape', async () => {
      const id = await aliceTask(running);
      await running.call('POST', `/api/v1/tasks/${id}/cancel`, { as: 'alice' });
      const again = await running.call('POST', `/api/v1/tasks/${id}/pause`, { as: 'alice' });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ success: false, code: 'INVALID_TRANSITION', message: expect.stringContaining('CANCELLED'), requestId: expect.any(String) });
      expect(again.headers.get('x-request-id')).toBe(again.body.requestId);
    });

    it('streams progress while a task runs and closes when it ends, in-process and from a server without the worker', { timeout: 30_000 }, async () => {
      const twin = stores.twin(store);
      const remote = await createServer({ store: twin, tasks: [], logger: false, port: 0, sse: { minPollMs: 20, maxPollMs: 100 } });
      const remoteUrl = await remote.listen();
      try {
        const submitted = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.gated', payload: {} } });
        const id = submitted.body.task.id;
        const open = (base: string) => fetch(`${base}/api/v1/tasks/${id}/events`, { headers: { authorization: `Bearer ${running.tokens.alice}` } });
        const [local, far] = await Promise.all([open(running.url), open(remoteUrl)]);
        expect(local.headers.get('content-type')).toMatch(/text\/event-stream/);
        const streams = [sseEvents(local), sseEvents(far)];
        for (let step = 1; step <= 3; step++) {
          gate.release();
          for (const stream of streams) await readUntil(stream, (e) => (e.event === 'progress' ? e.data.progress : e.data.progress)?.processed === step);
        }
        gate.release();
        for (const stream of streams) {
          const end = await readUntil(stream, (e) => e.event === 'end');
          expect(end.data).toEqual({ id, status: 'SUCCESS' });
          expect((await stream.next()).done).toBe(true);
        }
      } finally {
        await remote.close();
        await twin.close();
      }
    });
  });

  describe('what a user sees', () => {
    it("a user's view of its running task has no lease owner nor lease token; an operator's has both", { timeout: 30_000 }, async () => {
      const submitted = await running.call('POST', '/api/v1/tasks', { as: 'alice', body: { type: 'test.gated', payload: {} } });
      expect(submitted.body.task).not.toHaveProperty('leaseOwner');
      const id = submitted.body.task.id;
      await waitFor(async () => (await running.server.client.get(id))?.leaseToken != null, 'the gated task is leased');
      const hidden = (task: Record<string, unknown>) => ['leaseOwner', 'leaseToken'].filter((key) => key in task);
      const events = await fetch(`${running.url}/api/v1/tasks/${id}/events`, { headers: { authorization: `Bearer ${running.tokens.alice}` } });
      const stream = sseEvents(events);
      try {
        const first = await readUntil(stream, (e) => e.event === 'task');
        expect(hidden(first.data)).toEqual([]);
        const one = await running.call('GET', `/api/v1/tasks/${id}`, { as: 'alice' });
        expect([one.body.status, hidden(one.body), one.body.leaseUntil]).toEqual(['RUNNING', [], expect.any(String)]);
        const listed = await running.call('GET', '/api/v1/tasks?type=test.gated&limit=1000', { as: 'alice' });
        expect(listed.body.tasks.flatMap(hidden)).toEqual([]);
        const waited = await running.call('GET', `/api/v1/tasks/${id}/wait?timeoutMs=10`, { as: 'alice' });
        expect(hidden(waited.body.task)).toEqual([]);
        const operator = await running.call('GET', `/api/v1/tasks/${id}`, { as: 'operator' });
        expect([typeof operator.body.leaseOwner, typeof operator.body.leaseToken]).toEqual(['string', 'string']);
      } finally {
        for (let step = 0; step < 4; step++) gate.release();
        await waitFor(async () => (await running.server.client.get(id))?.status === 'SUCCESS', 'the gated task ended');
        await stream.return(undefined);
      }
    });

    it('caps the live streams one credential holds (its dashboard sessions included); others still get theirs', async () => {
      const capped = await createServer({ store, logger: false, port: 0, sse: { maxStreamsPerIdentity: 2, minPollMs: 20, maxPollMs: 200 } });
      const url = await capped.listen();
      const open: AbortController[] = [];
      const stream = async (headers: Record<string, string>) => {
        const abort = new AbortController();
        const response = await fetch(`${url}/api/v1/events`, { headers, signal: abort.signal });
        if (response.status === 200) open.push(abort);
        const code = response.status === 200 ? null : ((await response.json()) as { code: string }).code;
        return { status: response.status, code };
      };
      try {
        const alice = { authorization: `Bearer ${running.tokens.alice}` };
        expect([(await stream(alice)).status, (await stream(alice)).status]).toEqual([200, 200]);
        expect(await stream(alice)).toEqual({ status: 429, code: 'RATE_LIMITED' });
        const login = await fetch(`${url}/api/v1/session`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: url },
          body: JSON.stringify({ token: running.tokens.alice }),
        });
        const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
        expect((await stream({ cookie })).status).toBe(429);
        expect((await stream({ authorization: `Bearer ${running.tokens.bob}` })).status).toBe(200);
        open.shift()!.abort();
        await waitFor(async () => (await stream(alice)).status === 200, "a stream of alice's freed");
      } finally {
        for (const abort of open) abort.abort();
        await capped.close();
      }
    });
  });

  describe('operator actions on the task history', () => {
    it('records who paused, resumed, cancelled and replayed: the caller\u2019s credential and token name; a user sees only its own', async () => {
      const tokenIds = Object.fromEntries((await running.server.client.tokens.list()).map((t) => [t.name, t.id]));
      const actor = (name: string) => ({ actor: `token:${tokenIds[name]}`, actorName: `token:${name}` });
      const id = await aliceTask(running);
      expect((await running.call('POST', `/api/v1/tasks/${id}/pause`, { as: 'alice' })).status).toBe(200);
      expect((await running.call('POST', `${ADMIN_PREFIX}/${id}/resume`, { as: 'operator' })).status).toBe(200);
      expect((await running.call('POST', `/api/v1/tasks/${id}/cancel`, { as: 'admin' })).status).toBe(200);
      // A change that does not apply records nothing.
      expect((await running.call('POST', `/api/v1/tasks/${id}/resume`, { as: 'alice' })).status).toBe(409);
      const seen = await running.call('GET', `/api/v1/tasks/${id}/actions`, { as: 'operator' });
      expect(seen.status).toBe(200);
      const rows = (body: { actions: Record<string, unknown>[] }) =>
        body.actions.map((a) => ({ action: a.action, from: a.fromStatus, to: a.toStatus, actor: a.actor, actorName: a.actorName }));
      expect(rows(seen.body)).toEqual([
        { action: 'CANCEL', from: 'QUEUED', to: 'CANCELLED', ...actor('test admin') },
        { action: 'RESUME', from: 'PAUSED', to: 'QUEUED', ...actor('test operator') },
        { action: 'PAUSE', from: 'QUEUED', to: 'PAUSED', ...actor('test alice') },
      ]);
      expect(Date.parse(seen.body.actions[0].at)).toBeGreaterThanOrEqual(Date.parse(seen.body.actions[2].at));
      // Alice sees what was done and when, and who only for her own credential's action.
      const hers = await running.call('GET', `/api/v1/tasks/${id}/actions?limit=10`, { as: 'alice' });
      expect(rows(hers.body).map((r) => [r.action, r.actor, r.actorName])).toEqual([
        ['CANCEL', null, null],
        ['RESUME', null, null],
        ['PAUSE', actor('test alice').actor, 'token:test alice'],
      ]);
      expect((await running.call('GET', `/api/v1/tasks/${id}/actions`, { as: 'bob' })).status).toBe(404);
      expect((await running.call('GET', `/api/v1/tasks/${id}/actions?limit=0`, { as: 'operator' })).status).toBe(400);

      const failed = await failedTask(running);
      expect((await running.call('POST', `${ADMIN_PREFIX}/dead-letters/${failed.deadLetterId}/replay`, { as: 'operator' })).body.data.outcome).toBe('REPLAYED');
      const replayed = await running.call('GET', `/api/v1/tasks/${failed.taskId}/actions`, { as: 'admin' });
      expect(replayed.body.actions[replayed.body.actions.length - 1]).toMatchObject({
        action: 'REPLAY',
        fromStatus: 'FAILED',
        toStatus: 'QUEUED',
        detail: failed.deadLetterId,
        ...actor('test operator'),
      });
      // The library's own calls are recorded as the client's actor.
      const quiet = await aliceTask(running);
      await running.server.client.pause(quiet);
      expect((await running.server.client.actions(quiet)).map((a) => [a.action, a.actor])).toEqual([['PAUSE', 'library']]);
    });
  });

  describe('the admin API', () => {
    it('cleans archived dead letters older than the retention, never waiting ones', async () => {
      const archived = await failedTask(running);
      const waiting = await failedTask(running);
      const archive = await running.call('POST', `${ADMIN_PREFIX}/dead-letters/archive`, { as: 'operator', body: [archived.deadLetterId] });
      expect(archive.body.data).toEqual({ archived: 1 });
      const letterIds = async () => (await running.server.client.deadLetters.list({ taskType: 'test.fail', limit: 1000 })).map((l) => l.id);
      const kept = await running.call('POST', `${ADMIN_PREFIX}/dead-letters/clean?retentionDays=1`, { as: 'operator' });
      expect([kept.status, kept.body.data.deleted]).toEqual([200, 0]);
      expect(await letterIds()).toContain(archived.deadLetterId);
      const cleaned = await running.call('POST', `${ADMIN_PREFIX}/dead-letters/clean?retentionDays=0&batchSize=1`, { as: 'operator' });
      expect(cleaned.status).toBe(200);
      expect(cleaned.body.data.deleted).toBeGreaterThanOrEqual(1);
      expect(cleaned.body.data.batches).toBe(cleaned.body.data.deleted + 1);
      const left = await letterIds();
      expect(left).not.toContain(archived.deadLetterId);
      expect(left).toContain(waiting.deadLetterId);
      const negative = await running.call('POST', `${ADMIN_PREFIX}/dead-letters/clean?retentionDays=-1`, { as: 'operator' });
      expect([negative.status, negative.body.code]).toEqual([400, 'VALIDATION']);
      const forbidden = await running.call('POST', `${ADMIN_PREFIX}/dead-letters/clean?retentionDays=0`, { as: 'alice' });
      expect(forbidden.status).toBe(403);
    });

    it('a null policy field means the default on PUT: stored and answered as null, never 0', () => nullPolicyFieldsStayNull(running));
  });

  describe('schedules', () => {
    it('an admin saves a schedule, everyone operating sees its next runs; a bad cron or zone is a typed 400', async () => {
      const url = `${ADMIN_PREFIX}/schedules/nightly-report`;
      const body = { taskType: 'test.idle', cron: '0 3 * * *', timeZone: 'Asia/Tokyo', payload: { n: 1 }, catchUp: 1 };
      const saved = await running.call('PUT', url, { as: 'admin', body });
      expect([saved.status, saved.body.data.enabled, saved.body.data.timeZone]).toEqual([200, true, 'Asia/Tokyo']);
      // 03:00 in Tokyo is 18:00 UTC the day before.
      const listed = await running.call('GET', `${ADMIN_PREFIX}/schedules?nextRuns=2`, { as: 'operator' });
      const nightly = (listed.body.data as { key: string; nextRuns: string[] }[]).find((s) => s.key === 'nightly-report')!;
      expect(nightly.nextRuns.map((run) => new Date(run).getUTCHours())).toEqual([18, 18]);
      expect((await running.call('PUT', url, { as: 'operator', body })).status).toBe(403);
      const disabled = await running.call('POST', `${url}/disable`, { as: 'admin' });
      expect([disabled.body.data.enabled, disabled.body.data.nextRuns]).toEqual([false, []]);
      const badCron = await running.call('PUT', url, { as: 'admin', body: { ...body, cron: '0 25 * * *' } });
      expect([badCron.status, badCron.body.code, badCron.body.field]).toEqual([400, 'INVALID_CRON', 'cron']);
      const badZone = await running.call('PUT', url, { as: 'admin', body: { ...body, timeZone: 'Moon/Tranquility' } });
      expect([badZone.status, badZone.body.code]).toEqual([400, 'INVALID_TIME_ZONE']);
      expect((await running.call('DELETE', url, { as: 'admin' })).status).toBe(200);
      expect((await running.call('GET', url, { as: 'operator' })).status).toBe(404);
    });
  });

  describe('adaptive limits and start estimates', () => {
    it('an admin turns adaptation on, an operator policy write overrides it (in the trail, with the caller), a bad bound is a typed 400', async () => {
      const url = `${ADMIN_PREFIX}/adaptive/http.adaptive`;
      const saved = await running.call('PUT', url, { as: 'admin', body: { minLimit: 2, maxLimit: 9, codes: ['HTTP_503'] } });
      expect([saved.status, saved.body.data.currentLimit, saved.body.data.enabled]).toEqual([200, 9, true]);
      expect((await running.call('PUT', url, { as: 'operator', body: { maxLimit: 4 } })).status).toBe(403);
      const policy = await running.call('PUT', `${ADMIN_PREFIX}/policy/type/http.adaptive`, { as: 'operator', body: { maxConcurrency: 4 } });
      expect(policy.status).toBe(200);
      const state = await running.call('GET', url, { as: 'operator' });
      expect([state.body.data.overridden, state.body.data.currentLimit]).toEqual([true, 4]);
      const history = await running.call('GET', `${url}/history?limit=5`, { as: 'operator' });
      expect((history.body.data as { kind: string; actor: string }[]).map((c) => c.kind)).toEqual(['override', 'set']);
      expect((history.body.data as { actor: string }[])[0]!.actor).toMatch(/^token:/);
      const resumed = await running.call('POST', `${url}/resume`, { as: 'admin' });
      expect([resumed.status, resumed.body.data.overridden]).toEqual([200, false]);
      const bad = await running.call('PUT', url, { as: 'admin', body: { minLimit: 5, maxLimit: 3 } });
      expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);
      expect((await running.call('GET', `${ADMIN_PREFIX}/adaptive/http.never`, { as: 'operator' })).status).toBe(404);
    });

    it('a user asks when its own task will start; another owner hears 404', async () => {
      const id = await aliceTask(running);
      const answer = await running.call('GET', `/api/v1/tasks/${id}/estimate`, { as: 'alice' });
      expect([answer.status, answer.body.state, answer.body.taskId]).toEqual([200, 'WAITING', id]);
      expect((answer.body.binds as { kind: string }[]).map((b) => b.kind)).toContain('type');
      expect((await running.call('GET', `/api/v1/tasks/${id}/estimate`, { as: 'bob' })).status).toBe(404);
    });
  });

  describe('events', () => {
    it('admins subscribe, operators list, users publish for their own owner; a repeat with the key creates nothing', async () => {
      const url = `${ADMIN_PREFIX}/subscriptions`;
      const saved = await running.call('PUT', url, { as: 'admin', body: { event: 'http.order-placed', taskType: 'test.idle', maxAttempts: 2 } });
      expect([saved.status, saved.body.data.event, saved.body.data.maxAttempts, saved.body.data.priority]).toEqual([200, 'http.order-placed', 2, null]);
      expect((await running.call('PUT', url, { as: 'operator', body: { event: 'http.order-placed', taskType: 'test.idle' } })).status).toBe(403);
      const badEvent = await running.call('PUT', url, { as: 'admin', body: { event: 'has:colon', taskType: 'test.idle' } });
      expect(badEvent.status).toBe(400);
      const listed = await running.call('GET', `${url}?event=http.order-placed`, { as: 'operator' });
      expect((listed.body.data as { taskType: string }[]).map((s) => s.taskType)).toEqual(['test.idle']);

      const body = { event: 'http.order-placed', payload: { order: 7 }, idempotencyKey: 'o-7', delayMs: 3_600_000 };
      const first = await running.call('POST', '/api/v1/publish', { as: 'alice', body });
      expect(first.status).toBe(202);
      expect(
        first.body.results.map((r: { created: boolean; task: { taskType: string; owner: string; maxAttempts: number } }) => [
          r.created,
          r.task.taskType,
          r.task.owner,
          r.task.maxAttempts,
        ]),
      ).toEqual([[true, 'test.idle', 'alice', 2]]);
      const again = await running.call('POST', '/api/v1/publish', { as: 'alice', body });
      expect([again.body.results[0].created, again.body.results[0].task.id]).toEqual([false, first.body.results[0].task.id]);
      // Alice's task: bob does not see it; alice cannot publish for bob.
      expect((await running.call('GET', `/api/v1/tasks/${first.body.results[0].task.id}`, { as: 'bob' })).status).toBe(404);
      expect((await running.call('POST', '/api/v1/publish', { as: 'alice', body: { ...body, owner: 'bob' } })).status).toBe(403);
      const nobody = await running.call('POST', '/api/v1/publish', { as: 'alice', body: { event: 'http.nobody-listens', payload: 1 } });
      expect([nobody.status, nobody.body]).toEqual([202, { event: 'http.nobody-listens', results: [] }]);

      const removed = await running.call('DELETE', `${url}?event=http.order-placed&taskType=test.idle`, { as: 'admin' });
      expect(removed.status).toBe(200);
      const missing = await running.call('DELETE', `${url}?event=http.order-placed&taskType=test.idle`, { as: 'admin' });
      expect([missing.status, missing.body.code]).toEqual([404, 'NOT_FOUND']);
      expect((await running.call('POST', '/api/v1/publish', { as: 'alice', body: { ...body, idempotencyKey: 'o-8' } })).body.results).toEqual([]);
    });
  });

  describe('hostile input', () => {
    const countTasks = async () => (await running.server.client.list({ limit: 1000 })).tasks.length;

    it('oversized bodies 413, malformed JSON 400, unknown fields 400, wrong media type 415 — nothing written', async () => {
      const before = await countTasks();
      const big = await running.call('POST', '/api/v1/tasks', { as: 'admin', body: { type: 'test.idle', payload: 'x'.repeat(600 * 1024) } });
      expect(big.status).toBe(413);
      expect(big.body.code).toBe('REQUEST_TOO_LARGE');
      const malformed = await running.call('POST', '/api/v1/tasks', { as: 'admin', rawBody: '{"type": "test.idle", ' });
      expect([malformed.status, malformed.body.code]).toEqual([400, 'VALIDATION']);
      const unknown = await running.call('POST', '/api/v1/tasks', { as: 'admin', body: { type: 'test.idle', payload: {}, evil: true } });
      expect([unknown.status, unknown.body.field]).toEqual([400, 'body']);
      const media = await running.call('POST', '/api/v1/tasks', {
        as: 'admin',
        rawBody: 'type=test.idle',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(media.status).toBe(415);
      const unknownType = await running.call('POST', '/api/v1/tasks', { as: 'admin', body: { type: 'nope', payload: {} } });
      expect([unknownType.status, unknownType.body.code]).toEqual([400, 'UNKNOWN_TASK_TYPE']);
      expect(await countTasks()).toBe(before);
    });

    it('path ids that are not ids and SQL in query strings get clear 400s or harmless answers', async () => {
      const long = await running.call('GET', `/api/v1/tasks/${'a'.repeat(300)}`, { as: 'admin' });
      expect(long.status).toBe(414);
      for (const path of [
        '/api/v1/tasks/1%20OR%201=1',
        '/api/v1/tasks/..%2F..%2Fetc',
        `/api/v1/tasks/${'a'.repeat(90)}`,
        `${ADMIN_PREFIX}/%27%3B%20DROP%20TABLE%20x/pause`,
      ]) {
        const answer = await running.call(path.endsWith('pause') ? 'POST' : 'GET', path, { as: 'admin' });
        expect(answer.status, path).toBe(400);
        expect(answer.body.field, path).toBe('params.id');
      }
      const before = await countTasks();
      const injected = await running.call('GET', `/api/v1/tasks?type=${encodeURIComponent("x' OR '1'='1")}`, { as: 'admin' });
      expect([injected.status, injected.body.tasks]).toEqual([200, []]);
      const badStatus = await running.call('GET', `/api/v1/tasks?status=${encodeURIComponent('QUEUED;DROP TABLE system_async_task')}`, { as: 'admin' });
      expect([badStatus.status, badStatus.body.field]).toEqual([400, 'querystring.status']);
      expect(await countTasks()).toBe(before);
    });

    it('10,000 ids in a batch are worked through in batches; 10,001 are refused', { timeout: 60_000 }, async () => {
      const mine = await aliceTask(running);
      const ids = [mine, ...Array.from({ length: 9_999 }, () => randomUUID())];
      const cancelled = await running.call('POST', `${ADMIN_PREFIX}/batch-cancel`, { as: 'operator', body: ids });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.data).toMatchObject({ count: 1, cancelled: 1, cancelRequested: 0 });
      expect(cancelled.body.data.notCancelled).toHaveLength(9_999);
      const tooMany = await running.call('POST', `${ADMIN_PREFIX}/batch-cancel`, { as: 'operator', body: [...ids, randomUUID()] });
      expect([tooMany.status, tooMany.body.code]).toEqual([400, 'VALIDATION']);
      const other = await aliceTask(running);
      const refused = await running.call('POST', `${ADMIN_PREFIX}/batch-cancel`, { as: 'operator', body: [other, ...ids] });
      expect(refused.status).toBe(400);
      expect((await running.server.client.get(other))!.status).toBe('QUEUED');
    });

    it('expired and revoked tokens, and tokens in the wrong place, answer 401', async () => {
      const expired = await running.server.client.tokens.create({ name: 'expired', role: 'admin', expiresInMs: 1 });
      await waitFor(async () => (await running.call('GET', '/api/v1/tasks', { token: expired.token })).status === 401, 'the token expired');
      const made = await running.call('POST', `${ADMIN_PREFIX}/tokens`, { as: 'admin', body: { name: 'short-lived', role: 'operator' } });
      expect(made.status).toBe(201);
      expect((await running.call('GET', '/api/v1/tasks', { token: made.body.data.token })).status).toBe(200);
      expect((await running.call('DELETE', `${ADMIN_PREFIX}/tokens/${made.body.data.record.id}`, { as: 'admin' })).status).toBe(200);
      const revoked = await running.call('GET', '/api/v1/tasks', { token: made.body.data.token });
      expect([revoked.status, revoked.body.code]).toEqual([401, 'UNAUTHENTICATED']);
      const listed = await running.call('GET', `${ADMIN_PREFIX}/tokens`, { as: 'admin' });
      expect(JSON.stringify(listed.body)).not.toContain(running.tokens.admin);
      const token = running.tokens.admin;
      const wrong = [
        await running.call('GET', '/api/v1/tasks', { headers: { 'x-api-key': token } }),
        await running.call('GET', `/api/v1/tasks?access_token=${token}`),
        await running.call('GET', '/api/v1/tasks', { headers: { authorization: `Token ${token}` } }),
        await running.call('GET', '/api/v1/tasks', { headers: { authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` } }),
        await running.call('GET', '/api/v1/tasks', { headers: { authorization: `Bearer ${token}x` } }),
      ];
      expect(wrong.map((a) => a.status)).toEqual([401, 401, 401, 401, 401]);
      expect(wrong[0]!.body.message).toMatch(/x-api-key are not accepted/);
    });

    it('with corsOrigins: a preflight answers, and a refused request carries the CORS and security headers', async () => {
      const withCors = await createServer({ store, logger: false, port: 0, corsOrigins: ['https://ops.example.com'] });
      const url = await withCors.listen();
      try {
        const origin = { origin: 'https://ops.example.com' };
        const preflight = await fetch(`${url}/api/v1/tasks`, { method: 'OPTIONS', headers: { ...origin, 'access-control-request-method': 'POST' } });
        expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, 'https://ops.example.com']);
        const refused = await fetch(`${url}/api/v1/tasks`, { headers: origin });
        expect(refused.status).toBe(401);
        expect(refused.headers.get('access-control-allow-origin')).toBe('https://ops.example.com');
        expect(refused.headers.get('x-content-type-options')).toBe('nosniff');
      } finally {
        await withCors.close();
      }
    });

    it('refuses to create a token whose expiry has already passed, with a typed error', async () => {
      const past = new Date(Date.now() - 1000);
      await expect(running.server.client.tokens.create({ name: 'stillborn', role: 'admin', expiresAt: past })).rejects.toMatchObject({
        name: 'TokenExpiryPastError',
        code: 'TOKEN_EXPIRY_PAST',
        field: 'expiresAt',
      });
      const answer = await running.call('POST', `${ADMIN_PREFIX}/tokens`, {
        as: 'admin',
        body: { name: 'stillborn', role: 'admin', expiresAt: past.toISOString() },
      });
      expect([answer.status, answer.body.code, answer.body.field]).toEqual([400, 'TOKEN_EXPIRY_PAST', 'expiresAt']);
      expect((await running.server.client.tokens.list()).some((t) => t.name === 'stillborn')).toBe(false);
    });

    it('throttles wrong credentials per address, never a valid one, and counts neither a missing credential nor a cross-site refusal', async () => {
      const limited = await createServer({ store, logger: false, port: 0, failedAuthLimit: { max: 3, windowMs: 60_000 }, trustProxy: true });
      const url = await limited.listen();
      try {
        const from = (address: string, headers: Record<string, string> = {}) => ({ headers: { 'x-forwarded-for': address, ...headers } });
        const wrong = (address: string) => fetch(`${url}/api/v1/tasks`, from(address, { authorization: 'Bearer tl_wrong' }));
        const login = await fetch(`${url}/api/v1/session`, {
          method: 'POST',
          ...from('10.0.0.1', { 'content-type': 'application/json', origin: url }),
          body: JSON.stringify({ token: running.tokens.admin }),
        });
        const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
        const { task } = await running.server.client.submit('test.idle', {}, { delayMs: 3_600_000 });
        for (let i = 0; i < 5; i++) {
          expect((await fetch(`${url}/api/v1/tasks`, from('10.0.0.1'))).status).toBe(401);
          const crossSite = await fetch(`${url}/api/v1/tasks/${task.id}/cancel`, {
            method: 'POST',
            ...from('10.0.0.1', { cookie, origin: 'https://evil.example' }),
          });
          expect(crossSite.status).toBe(403);
        }
        const statuses = [];
        for (let i = 0; i < 4; i++) statuses.push((await wrong('10.0.0.1')).status);
        expect(statuses).toEqual([401, 401, 401, 429]);
        const limitedAnswer = await wrong('10.0.0.1');
        expect([limitedAnswer.status, ((await limitedAnswer.json()) as { code: string }).code]).toEqual([429, 'RATE_LIMITED']);
        expect(Number(limitedAnswer.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(limitedAnswer.headers.get('x-content-type-options')).toBe('nosniff');
        // The valid credentials from the same address still pass: a bearer token, the session cookie, a login.
        expect((await fetch(`${url}/api/v1/tasks`, from('10.0.0.1', { authorization: `Bearer ${running.tokens.admin}` }))).status).toBe(200);
        expect((await fetch(`${url}/api/v1/tasks`, from('10.0.0.1', { cookie }))).status).toBe(200);
        const relogin = (token: string) =>
          fetch(`${url}/api/v1/session`, {
            method: 'POST',
            ...from('10.0.0.1', { 'content-type': 'application/json', origin: url }),
            body: JSON.stringify({ token }),
          });
        expect((await relogin(running.tokens.operator)).status).toBe(200);
        expect((await relogin('tl_wrong')).status).toBe(429);
        // Another client's failures are its own.
        expect((await wrong('10.0.0.2')).status).toBe(401);
        expect((await fetch(`${url}/actuator/health/liveness`, from('10.0.0.1'))).status).toBe(200);
      } finally {
        await limited.close();
      }
    });
  });

  describe('probes, metrics and docs', () => {
    const PROBES = [
      '/actuator/health',
      '/actuator/health/liveness',
      '/actuator/health/readiness',
      '/actuator/health/startup',
      '/actuator/health/asyncTaskWorker',
    ];

    it('probes show an anonymous caller, a user and a wrong token only their status; an operator or admin the details', async () => {
      for (const path of PROBES) {
        const operator = await running.call('GET', path, { as: 'operator' });
        expect([path, operator.status, Object.keys(operator.body).sort()]).toEqual([path, 200, ['details', 'status']]);
        expect((await running.call('GET', path, { as: 'admin' })).body.details).toBeDefined();
        for (const who of [{}, { as: 'alice' as const }, { token: 'tl_wrong' }, { headers: { cookie: 'tasklease_session=tls_forged' } }]) {
          const answer = await running.call('GET', path, who);
          expect([path, JSON.stringify(who), answer.status, answer.body]).toEqual([path, JSON.stringify(who), 200, { status: operator.body.status }]);
        }
      }
      const anonymous = await running.call('GET', '/actuator/health');
      for (const secret of ['worker_id', 'workerId', 'test.idle', 'schemaVersion', 'QUEUED']) expect(anonymous.text).not.toContain(secret);
    });

    it('healthDetails always shows every caller the details, never shows them to nobody', async () => {
      for (const [healthDetails, shown] of [
        ['always', true],
        ['never', false],
      ] as const) {
        const other = await createServer({ store, logger: false, port: 0, healthDetails });
        const url = await other.listen();
        try {
          const read = async (headers: Record<string, string>) => (await (await fetch(`${url}/actuator/health/readiness`, { headers })).json()) as object;
          expect('details' in (await read({}))).toBe(shown);
          expect('details' in (await read({ authorization: `Bearer ${running.tokens.admin}` }))).toBe(shown);
        } finally {
          await other.close();
        }
      }
      await expect(createServer({ store, logger: false, healthDetails: 'sometimes' as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    });

    it("answers the seed's worker document and metric look-ups, Prometheus text and OpenAPI", async () => {
      const worker = await running.call('GET', '/actuator/health/asyncTaskWorker', { as: 'operator' });
      expect(worker.body).toMatchObject({
        status: 'UP',
        details: { max_concurrency: 8, registered_task_types: ['test.idle', 'test.fail', 'test.gated', 'test.logged'] },
      });
      expect(worker.body.details.utilization).toMatch(/^\d+\.\d\d%$/);
      const types = await running.call('GET', '/actuator/metrics/async.task.registered.types', { as: 'operator' });
      expect(types.body.measurements[0].value).toBe(4);
      const size = await running.call('GET', '/actuator/metrics/async.task.dead.letter.queue.size', { as: 'operator' });
      expect(size.body.measurements[0].value).toBe(await running.server.client.deadLetters.size());
      const rate = await running.call('GET', '/actuator/metrics/async.task.lease.renewal.success.rate', { as: 'operator' });
      expect(rate.body.measurements[0].value).toBeGreaterThan(0.99);
      expect((await running.call('GET', '/actuator/metrics/no.such.metric', { as: 'operator' })).status).toBe(404);
      // the seed's pool look-up answers on every store with a pool (PostgreSQL and MySQL/MariaDB), 404 on SQLite
      const active = await running.call('GET', '/actuator/metrics/hikaricp.connections.active', { as: 'operator' });
      if (store.dialect === 'sqlite') expect(active.status).toBe(404);
      else expect([active.status, active.body.measurements[0].value]).toEqual([200, expect.any(Number)]);
      const max = await running.call('GET', '/actuator/metrics/hikaricp.connections.max', { as: 'operator' });
      if (store.dialect !== 'sqlite') expect(max.body.measurements[0].value).toBeGreaterThan(0);
      const prometheus = await running.call('GET', '/metrics', { as: 'operator' });
      expect(prometheus.headers.get('content-type')).toMatch(/text\/plain/);
      expect(prometheus.text).toMatch(/^async_task_submitted_total\{task_type="test.idle"\} \d+/m);
      const openapi = await running.call('GET', '/openapi.json', { as: 'alice' });
      expect(openapi.body.openapi).toBe('3.0.3');
      expect(Object.keys(openapi.body.paths)).toEqual(
        expect.arrayContaining(['/api/v1/tasks', '/api/admin/async-task/{id}/pause', '/actuator/health/readiness']),
      );
      expect(openapi.body.paths['/api/v1/tasks'].post.security).toEqual([{ bearerAuth: [] }]);
      const docs = await running.call('GET', '/docs/static/index.html', { as: 'alice' });
      expect(docs.text).toContain('swagger-ui');
      expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
      expect(docs.headers.get('content-security-policy')).toBeTruthy();
    });
  });
}

/** PUT with null policy fields (what the dashboard's Save sends for empty fields): null is kept, never coerced to 0. */
export async function nullPolicyFieldsStayNull(running: Running): Promise<void> {
  const url = `${ADMIN_PREFIX}/policy/type/test.idle`;
  const set = await running.call('PUT', url, { as: 'operator', body: { maxConcurrency: 4, maxAttempts: 5, retryBaseDelayMs: 2000 } });
  expect(set.body.data).toMatchObject({ maxConcurrency: 4, maxAttempts: 5, retryBaseDelayMs: 2000 });
  // What the dashboard's Save sends with every field left empty.
  const cleared = await running.call('PUT', url, {
    as: 'operator',
    body: { maxConcurrency: null, maxAttempts: null, retryBaseDelayMs: null, enabled: true },
  });
  expect(cleared.status).toBe(200);
  expect(cleared.body.data).toMatchObject({ maxConcurrency: null, maxAttempts: null, retryBaseDelayMs: null, enabled: true });
  expect(await running.server.client.policies.get('test.idle')).toMatchObject({ maxConcurrency: null, maxAttempts: null, retryBaseDelayMs: null });
  const global = await running.call('PUT', `${ADMIN_PREFIX}/policy/global`, { as: 'operator', body: { retryBaseDelayMs: null } });
  expect(global.body.data.retryBaseDelayMs).toBeNull();
  const zero = await running.call('PUT', url, { as: 'operator', body: { retryBaseDelayMs: 0 } });
  expect(zero.body.data.retryBaseDelayMs).toBe(0);
  const owner = await running.call('PUT', `${ADMIN_PREFIX}/policy/owner/alice`, { as: 'operator', body: { maxConcurrency: null } });
  expect(owner.body.data.maxConcurrency).toBeNull();
  await running.server.client.policies.reset('test.idle');
  await running.server.client.policies.reset(null);
  await running.server.client.policies.reset({ owner: 'alice' });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function readUntil<T extends { event: string; data: any }>(stream: AsyncGenerator<T>, found: (event: T) => boolean): Promise<T> {
  for (;;) {
    const next = await stream.next();
    if (next.done) throw new Error('the stream ended before the awaited event');
    if (found(next.value)) return next.value;
  }
}

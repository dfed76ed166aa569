/**
 * Unauthorized calls (FAULTS.md 22) on every store: each state-changing
 * route of the HTTP server (the route table, with the authorization matrix's
 * own example requests: test/server/matrix.ts) called without a token, with
 * a forged, a tampered, an expired and a revoked one, with a role too low,
 * as another owner, and cross-site with the dashboard's session cookie. The
 * answers are test/server/suite.ts's matrix (401, 403, 404 for another
 * owner's task); what this adds is the database: after every refused call,
 * every row of tasklease's tables is as it was (handler-tables.ts snapshot).
 * And the same request, allowed, does change it — so "no change" means
 * something.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { ROLES_BY_ACCESS } from '../../src/server/routes.js';
import { exampleFor, type ExampleRequest } from '../server/matrix.js';
import { startTestServer, type Answer, type Running } from '../server/harness.js';
import { waitFor } from '../helpers/wait.js';
import type { FaultEnvironment } from './environment.js';
import { allTasks } from './invariants.js';

type Snapshot = Record<string, string[]>;

/** The rows, without a token's last use: bookkeeping of a successful authentication, which a 403 is. */
async function snapshot(env: FaultEnvironment): Promise<Snapshot> {
  const rows = await env.target.tables.snapshot();
  const tokens = rows.system_async_task_api_token ?? [];
  rows.system_async_task_api_token = tokens.map((row) => JSON.stringify({ ...(JSON.parse(row) as object), last_used_at: null })).sort();
  // The queue history is written by the server's recorder once a minute, on a timer: the minute an earlier allowed
  // call counted lands whenever the minute turns, during a later route's refusals too (a CI run saw it so).
  delete rows.system_async_task_queue_stat;
  return rows;
}

/** The tables whose rows differ between two snapshots. */
function changed(before: Snapshot, after: Snapshot): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((table) => JSON.stringify(before[table]) !== JSON.stringify(after[table]));
}

/**
 * The server's in-process worker has nothing left to do: no task running and none due. An allowed call before (a
 * retry, a replay) may have made a task due, which the worker then runs and fails: rows that change on their own.
 */
async function quiet(env: FaultEnvironment): Promise<void> {
  await waitFor(
    async () => {
      const now = (await env.store.now()).getTime();
      const busy = await allTasks(env.store, ['QUEUED', 'RETRY_WAIT', 'RUNNING', 'CANCEL_REQUESTED']);
      return busy.every((task) => (task.status === 'QUEUED' || task.status === 'RETRY_WAIT') && task.availableAt.getTime() > now);
    },
    'the server worker to have nothing running or due',
    30_000,
    50,
  );
}

interface Refusal {
  label: string;
  token?: string;
  headers?: Record<string, string>;
  /** The statuses a refusal may answer. */
  want: number[];
}

export function adminFaultCases(env: () => FaultEnvironment): void {
  it('refused calls to every state-changing route (no, forged, tampered, expired, revoked token; low role; another owner; cross-site cookie): no row changes', async () => {
    // No resumer: the examples' operations left RUNNING unrun (run: false) must not be taken up during another route's refusals.
    const running: Running = await startTestServer(env().store, { bulkResumeIntervalMs: 0 });
    try {
      const client = running.server.client;
      // A token can only be made with an expiry to come (TOKEN_EXPIRY_PAST): one that ends in a second, waited out.
      const expiresAt = new Date(Date.now() + 1000);
      const expired = (await client.tokens.create({ name: 'expired', role: 'admin', expiresAt })).token;
      await waitFor(() => Date.now() > expiresAt.getTime() + 50, 'the token to expire', 5000, 50);
      const revoked = await client.tokens.create({ name: 'revoked', role: 'admin' });
      await client.tokens.revoke(revoked.record.id);
      const admin = running.tokens.admin;
      const session = await running.call('POST', '/api/v1/session', { body: { token: admin }, headers: { origin: running.url } });
      expect(session.status).toBe(200);
      const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
      const always: Refusal[] = [
        // Wrong credentials from one address are throttled after a few (429): as refused as a 401.
        { label: 'no token', want: [401] },
        { label: 'forged token', token: `tl_${randomBytes(24).toString('base64url')}`, want: [401, 429] },
        { label: 'tampered admin token', token: `${admin.slice(0, -1)}${admin.endsWith('A') ? 'B' : 'A'}`, want: [401, 429] },
        { label: 'expired admin token', token: expired, want: [401, 429] },
        { label: 'revoked admin token', token: revoked.token, want: [401, 429] },
        { label: 'admin session cookie, cross-site Origin', headers: { cookie, origin: 'https://evil.example' }, want: [403] },
        { label: 'admin session cookie, Sec-Fetch-Site cross-site', headers: { cookie, 'sec-fetch-site': 'cross-site' }, want: [403] },
      ];
      const reads = new Set(['GET', 'HEAD']);
      const rules = running.server.app.routeRules.filter((rule) => !rule.method.split(',').every((m) => reads.has(m)));
      expect(rules.length).toBeGreaterThan(25);
      const failures: string[] = [];
      const unchangedWhenAllowed: string[] = [];
      for (const rule of rules) {
        if (rule.access === 'public') continue; // the login and logout of the session: nothing to refuse
        const name = `${rule.method} ${rule.url}`;
        const request: ExampleRequest = await exampleFor(rule.method, rule.url)!(running);
        const refusals = [...always];
        for (const role of ['operator', 'alice'] as const) {
          if (!ROLES_BY_ACCESS[rule.access].includes(role === 'alice' ? 'user' : role))
            refusals.push({ label: `as ${role}`, token: running.tokens[role], want: [403] });
        }
        // Another owner: on a task of alice's, bob hears 404, as for a task that does not exist.
        if (rule.ownTask) refusals.push({ label: "as bob, on alice's task", token: running.tokens.bob, want: [404] });
        await quiet(env());
        const before = await snapshot(env());
        for (const refusal of refusals) {
          const answer: Answer = await running.call(request.method, request.path, {
            ...(refusal.token ? { token: refusal.token } : {}),
            ...(refusal.headers ? { headers: refusal.headers } : {}),
            ...(request.body !== undefined ? { body: request.body } : {}),
          });
          if (!refusal.want.includes(answer.status)) failures.push(`${name}, ${refusal.label}: ${answer.status} ${answer.text.slice(0, 120)}`);
          const touched = changed(before, await snapshot(env()));
          if (touched.length > 0) failures.push(`${name}, ${refusal.label}: changed ${touched.join(', ')}`);
        }
        const allowed = await running.call(request.method, request.path, { as: 'admin', ...(request.body !== undefined ? { body: request.body } : {}) });
        if (allowed.status >= 300) failures.push(`${name} as admin: ${allowed.status} ${allowed.text.slice(0, 120)}`);
        // A bulk operation started runs in the background: its end, not a later route's refusals, changes its row.
        const started = (allowed.body as { operation?: { id: string } } | null)?.operation?.id;
        if (allowed.status === 202 && started)
          await waitFor(async () => (await client.bulk.get(started))?.status !== 'RUNNING', `${name}: its operation to end`, 30_000, 50);
        if (changed(before, await snapshot(env())).length === 0) unchangedWhenAllowed.push(name);
      }
      expect(failures).toEqual([]);
      // Allowed, these requests change rows (the cleanups have nothing old enough to remove): the refusals above kept them.
      expect(unchangedWhenAllowed.sort()).toEqual(['POST /api/admin/async-task/cleanup', 'POST /api/admin/async-task/dead-letters/clean']);
    } finally {
      await running.close();
    }
  }, 120_000);
}

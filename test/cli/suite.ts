/**
 * Every command end to end, in-process through run(argv, io), against one
 * dialect: exit codes, --json documents, and the errors of bad flags and
 * unknown ids. sqlite.test.ts and postgres.test.ts run it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Task } from '../../src/core/task.js';
import { openStore } from '../../src/store/open.js';
import { emptyCounts, historyStoreOf } from '../../src/store/queue-history.js';
import type { Store } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';
import { cli, FIXTURES, type CliEnv, type CliResult } from './harness.js';

export interface CliTarget {
  /** URL of a migrated, empty database for the current test. */
  url(): string;
  /** A database never migrated, for `migrate`; drop() removes it. */
  fresh(): Promise<{ url: string; drop(): Promise<void> }>;
  /** The schema version this code migrates to (known once the suite's database is migrated). */
  expectedSchemaVersion(): number;
}

/**
 * The suite on a database server: one area (schema or database) migrated for
 * the file and emptied before each test; `migrate` gets areas of its own.
 */
export function serverCliSuite<Area extends { clean(): Promise<void>; drop(): Promise<void> }>(options: {
  create: () => Promise<Area>;
  url: (area: Area) => string;
  openStore: (area: Area) => Store;
}): void {
  let area: Area | undefined;
  let expectedVersion = 0;
  beforeAll(async () => {
    area = await options.create();
    const store = options.openStore(area);
    await store.migrate();
    expectedVersion = store.expectedSchemaVersion;
    await store.close();
  });
  afterAll(async () => {
    await area?.drop();
  });
  beforeEach(() => area!.clean());
  cliSuite({
    url: () => options.url(area!),
    expectedSchemaVersion: () => expectedVersion,
    fresh: async () => {
      const fresh = await options.create();
      return { url: options.url(fresh), drop: () => fresh.drop() };
    },
  });
}

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

export function cliSuite(target: CliTarget): void {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-cli-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const tl = (argv: readonly string[], options: CliEnv = {}): Promise<CliResult> =>
    cli(argv, { ...options, cwd: options.cwd ?? dir, env: { TASKLEASE_DATABASE_URL: target.url(), ...options.env } });
  const submit = async (type: string, payload: unknown, ...flags: string[]): Promise<string> => {
    const submitted = await tl(['submit', type, JSON.stringify(payload), ...flags, '--json']);
    expect(submitted.code, submitted.stderr).toBe(0);
    return submitted.json<{ id: string }>().id;
  };
  const get = async (id: string): Promise<Task> => (await tl(['get', id, '--json'])).json<Task>();

  it('migrate creates the schema, then finds nothing to do; commands on an unmigrated database say to migrate', async () => {
    const fresh = await target.fresh();
    try {
      const env = { TASKLEASE_DATABASE_URL: fresh.url };
      const before = await tl(['list'], { env });
      expect([before.code, before.stderr]).toEqual([1, expect.stringMatching(/error SCHEMA_NOT_MIGRATED: .*tasklease migrate/)]);
      // the token and schedule commands too: their stores map the error like the task store
      for (const command of [
        ['token', 'list'],
        ['schedule', 'list'],
      ]) {
        const answer = await tl(command, { env });
        expect([answer.code, answer.stderr]).toEqual([1, expect.stringMatching(/error SCHEMA_NOT_MIGRATED: .*tasklease migrate/)]);
      }
      const first = await tl(['migrate', '--json'], { env });
      expect(first.code, first.stderr).toBe(0);
      expect(first.json()).toMatchObject({ previousVersion: 0, schemaVersion: target.expectedSchemaVersion() });
      const second = await tl(['migrate'], { env });
      expect(second.stdout).toMatch(new RegExp(`schema already at version ${target.expectedSchemaVersion()}`));
      expect((await tl(['list', '--json'], { env })).json()).toEqual({ tasks: [], nextCursor: null });
    } finally {
      await fresh.drop();
    }
  });

  describe('submit, get, list', () => {
    it('submits one task with its options and shows it as JSON and as a table', async () => {
      const submitted = await tl(['submit', 'cli.echo', '{"value":42}', '--priority', '7', '--max-attempts', '2', '--trace-id', 'trace-1', '--json'], {
        env: { TASKLEASE_OWNER: 'team-a' },
      });
      expect(submitted.code, submitted.stderr).toBe(0);
      const { id, created, status } = submitted.json<{ id: string; created: boolean; status: string }>();
      expect({ created, status }).toEqual({ created: true, status: 'QUEUED' });
      const task = await get(id);
      expect(task).toMatchObject({ id, taskType: 'cli.echo', payload: { value: 42 }, priority: 7, maxAttempts: 2, owner: 'team-a', traceId: 'trace-1' });
      const human = await tl(['get', id]);
      expect(human.stdout).toMatch(new RegExp(`id\\s+${id}`));
      expect(human.stdout).toMatch(/status\s+QUEUED/);
      expect(human.stdout).not.toContain('\u001b['); // not a TTY: no colours
    });

    it('submits through a task module\'s middleware (sealed); get shows "encrypted" unless TASKLEASE_PAYLOAD_KEYS holds its key', async () => {
      const tasks = join(FIXTURES, 'encrypted-tasks.ts');
      const id = await submit('cli.medical', { patient: 'Ada Lovelace' }, '--tasks', tasks);
      const sealed = await tl(['get', id]);
      expect(sealed.stdout).toMatch(/payload\s+encrypted \(aes-256-gcm, key c1; set TASKLEASE_PAYLOAD_KEYS/);
      expect(sealed.stdout + (await tl(['get', id, '--json'])).stdout).not.toContain('Lovelace');
      const keys = { TASKLEASE_PAYLOAD_KEYS: `c1:${Buffer.alloc(32, 9).toString('base64')}` };
      expect((await tl(['get', id, '--json'], { env: keys })).json()).toMatchObject({ payload: { patient: 'Ada Lovelace' } });
      expect((await tl(['get', id], { env: keys })).stdout).toContain('Ada Lovelace');
      // A key that does not open it: shown sealed, not an error.
      const wrong = await tl(['get', id], { env: { TASKLEASE_PAYLOAD_KEYS: `c1:${Buffer.alloc(32, 1).toString('base64')}` } });
      expect([wrong.code, wrong.stdout]).toEqual([0, expect.stringContaining('encrypted (aes-256-gcm, key c1')]);
    });

    it('returns the existing task for a repeated idempotency key', async () => {
      const first = await submit('cli.echo', {}, '--idempotency-key', 'k1');
      const again = await tl(['submit', 'cli.echo', '{}', '--idempotency-key', 'k1', '--json']);
      expect(again.json()).toMatchObject({ id: first, created: false });
      expect((await tl(['submit', 'cli.echo', '{}', '--idempotency-key', 'k1'])).stdout).toContain('already exists');
      const other = await submit('cli.echo', {}, '--idempotency-key', 'k10');
      const found = (await tl(['list', '--idempotency-key', 'k1', '--json'])).json<{ tasks: Task[] }>().tasks;
      expect(found.map((t) => t.id)).toEqual([first]);
      expect((await tl(['list', '--idempotency-key', 'k10', '--json'])).json<{ tasks: Task[] }>().tasks.map((t) => t.id)).toEqual([other]);
    });

    it('lists by payload field, payload prefix and key prefix; a bad path is SEARCH_PATH_INVALID', async () => {
      const ada = await submit('cli.echo', { order: { id: 42 }, customer: { name: 'Ada' } }, '--idempotency-key', 'inv-1');
      const text = await submit('cli.echo', { order: { id: '42' }, customer: { name: 'Bob' } }, '--idempotency-key', 'inv_2');
      const ids = async (...args: string[]): Promise<string[]> => {
        const answer = await tl(['list', ...args, '--json']);
        expect(answer.code, answer.stderr).toBe(0);
        return answer.json<{ tasks: Task[] }>().tasks.map((t) => t.id);
      };
      expect(await ids('--payload', 'order.id=42')).toEqual([ada]);
      expect(await ids('--payload', 'order.id="42"')).toEqual([text]);
      expect(await ids('--payload', 'order.id=42', '--payload-prefix', 'customer.name=B')).toEqual([]);
      expect(await ids('--payload-prefix', 'customer.name=Ad', '--key-prefix', 'inv-')).toEqual([ada]);
      expect(await ids('--key-prefix', 'inv_')).toEqual([text]);
      const bad = await tl(['list', '--payload', 'order id=42']);
      expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/SEARCH_PATH_INVALID/)]); // a usage error
    });

    it('submits with a uniqueness window: a second submit of the key answers the first task', async () => {
      const first = await submit('cli.echo', { v: 1 }, '--unique-key', 'u1', '--unique-period', '1h');
      const again = await tl(['submit', 'cli.echo', '{"v":2}', '--unique-key', 'u1', '--unique-period', '1h', '--json']);
      expect(again.json()).toMatchObject({ id: first, created: false });
      const debounced = await submit('cli.echo', { v: 1 }, '--unique-key', 'd1', '--debounce', '1h');
      expect((await tl(['submit', 'cli.echo', '{"v":2}', '--unique-key', 'd1', '--debounce', '1h', '--json'])).json()).toMatchObject({
        id: debounced,
        created: false,
      });
      expect((await tl(['get', debounced, '--json'])).json()).toMatchObject({ payload: { v: 2 } });
    });

    it('waits for a task to finish, or gives up after --timeout with WAIT_TIMEOUT', async () => {
      const id = await submit('cli.echo', {}, '--delay', '1h');
      const timedOut = await tl(['wait', id, '--timeout', '100ms']);
      expect(timedOut.code).toBe(1);
      expect(timedOut.stderr).toContain('WAIT_TIMEOUT');
      expect((await tl(['cancel', id])).code).toBe(0);
      const done = await tl(['wait', id, '--json']);
      expect(done.code, done.stderr).toBe(0);
      expect(done.json()).toMatchObject({ id, status: 'CANCELLED' });
    });

    it('lists with filters and pages with the cursor', async () => {
      const ids = [await submit('cli.a', { n: 1 }), await submit('cli.a', { n: 2 }), await submit('cli.b', { n: 3 }, '--owner', 'o2')];
      await tl(['pause', ids[0]!]);
      const page1 = (await tl(['list', '--type', 'cli.a', '--limit', '1', '--json'])).json<{ tasks: Task[]; nextCursor: string }>();
      expect(page1.tasks.map((t) => t.id)).toEqual([ids[1]]);
      const page2 = (await tl(['list', '--type', 'cli.a', '--cursor', page1.nextCursor, '--json'])).json<{ tasks: Task[]; nextCursor: null }>();
      expect(page2).toEqual(expect.objectContaining({ nextCursor: null }));
      expect(page2.tasks.map((t) => t.id)).toEqual([ids[0]]);
      expect((await tl(['list', '--status', 'paused', '--json'])).json<{ tasks: Task[] }>().tasks.map((t) => t.id)).toEqual([ids[0]]);
      expect((await tl(['list', '--status', 'QUEUED,PAUSED', '--json'])).json<{ tasks: Task[] }>().tasks).toHaveLength(3);
      expect((await tl(['list', '--owner', 'o2', '--json'])).json<{ tasks: Task[] }>().tasks.map((t) => t.id)).toEqual([ids[2]]);
      const table = await tl(['list', '--limit', '2']);
      expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+TYPE\s+STATUS/);
      expect(table.stdout).toContain('more: tasklease list --cursor');
    });

    it('rejects bad input with exit 2 and unknown ids with exit 3', async () => {
      const badJson = await tl(['submit', 'cli.echo', '{nope', '--json']);
      expect(badJson.code).toBe(2);
      expect(badJson.stderr).toMatch(/^error USAGE: payload is not valid JSON/);
      expect(badJson.json()).toMatchObject({ error: { code: 'USAGE', field: 'payload' } });
      const badFlag = await tl(['list', '--limit', '0']);
      expect(badFlag.code).toBe(2);
      expect(badFlag.stderr).toContain("error USAGE: option '-n, --limit <n>' argument '0' is invalid. must be an integer from 1 to 1000");
      const unknownFlag = await tl(['get', UNKNOWN_ID, '--colour']);
      expect([unknownFlag.code, unknownFlag.stderr]).toEqual([2, expect.stringContaining("unknown option '--colour'")]);
      const badStatus = await tl(['list', '--status', 'DONE']);
      expect([badStatus.code, badStatus.stderr]).toEqual([2, 'error VALIDATION: unknown status DONE\n']);
      const missing = await tl(['get', UNKNOWN_ID]);
      expect([missing.code, missing.stderr]).toEqual([3, `error NOT_FOUND: task "${UNKNOWN_ID}" not found\n`]);
      const missingJson = await tl(['get', UNKNOWN_ID, '--json']);
      expect(missingJson.json()).toEqual({ error: { code: 'NOT_FOUND', message: `task "${UNKNOWN_ID}" not found` } });
      const noType = await tl(['submit']);
      expect([noType.code, noType.stderr]).toEqual([2, expect.stringContaining('error USAGE: submit needs a task type')]);
      const both = await tl(['submit', 'cli.echo', '--delay', '1m', '--at', '2030-01-01T00:00:00Z']);
      expect([both.code, both.stderr]).toEqual([2, expect.stringContaining('give --delay or --at, not both')]);
      const badDelay = await tl(['submit', 'cli.echo', '--delay', '10']);
      expect([badDelay.code, badDelay.stderr]).toEqual([2, expect.stringContaining('must be a duration such as')]);
    });

    it('checks payloads against the schemas of --tasks modules', async () => {
      const tasks = join(FIXTURES, 'schema-tasks.ts');
      const ok = await tl(['submit', 'cli.import', '{"id":1,"name":"a"}', '--tasks', tasks, '--json']);
      expect(ok.code, ok.stderr).toBe(0);
      const invalid = await tl(['submit', 'cli.import', '{"id":"x"}', '--tasks', tasks]);
      expect([invalid.code, invalid.stderr]).toEqual([2, expect.stringMatching(/^error PAYLOAD_INVALID: payload for task type "cli.import" fails its schema/)]);
      const unknown = await tl(['submit', 'cli.other', '{}', '--tasks', tasks]);
      expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/^error UNKNOWN_TASK_TYPE/)]);
      const noModule = await tl(['submit', 'cli.import', '{}', '--tasks', 'missing.js']);
      expect([noModule.code, noModule.stderr]).toEqual([2, expect.stringContaining('task module missing.js does not exist')]);
    });
  });

  describe('submit --file', () => {
    it('submits every JSON line in batches; a re-run with an idempotency field adds nothing', async () => {
      const file = join(FIXTURES, 'rows.jsonl');
      const first = await tl(['submit', '--file', file, '--type', 'cli.rows', '--batch-size', '2', '--idempotency-key-field', 'id', '--json']);
      expect(first.code, first.stderr).toBe(0);
      expect(first.json()).toMatchObject({ taskType: 'cli.rows', submitted: 5, created: 5, existing: 0, batches: 3 });
      const again = await tl(['submit', 'cli.rows', '--file', file, '--idempotency-key-field', 'id', '--json']);
      expect(again.json()).toMatchObject({ submitted: 5, created: 0, existing: 5, batches: 1 });
      const tasks = (await tl(['list', '--type', 'cli.rows', '--json'])).json<{ tasks: Task[] }>().tasks;
      expect(tasks.map((t) => (t.payload as { id: number }).id).sort()).toEqual([1, 2, 3, 4, 5]);
      expect(tasks.map((t) => t.idempotencyKey).sort()).toEqual(['1', '2', '3', '4', '5']);
    });

    it('turns CSV rows into payload objects (quoted commas and line breaks kept)', async () => {
      const human = await tl(['submit', '--file', join(FIXTURES, 'rows.csv'), '--type', 'cli.csv']);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/^submitted 3 cli.csv tasks from .*rows.csv in 1 batches \(3 new, 0 already there\)/);
      const payloads = (await tl(['list', '--type', 'cli.csv', '--json'])).json<{ tasks: Task[] }>().tasks.map((t) => t.payload);
      expect(payloads).toEqual(
        expect.arrayContaining([
          { id: '1', name: 'alpha', note: 'plain' },
          { id: '2', name: 'beta', note: 'with, a comma' },
          { id: '3', name: 'gamma', note: 'two\nlines' },
        ]),
      );
    });

    it('stops at a bad line, naming it, after submitting the earlier batches', async () => {
      const bad = await tl(['submit', '--file', join(FIXTURES, 'bad.jsonl'), '--type', 'cli.bad', '--batch-size', '1']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('stopped: 2 tasks from earlier lines were submitted');
      expect(bad.stderr).toMatch(/error USAGE: .*bad.jsonl:3: not valid JSON/);
      const schemaBad = join(dir, 'rows.jsonl');
      writeFileSync(schemaBad, '{"id":1,"name":"a"}\n{"id":2}\n');
      const invalid = await tl(['submit', '--file', schemaBad, '--type', 'cli.import', '--tasks', join(FIXTURES, 'schema-tasks.ts')]);
      expect([invalid.code, invalid.stderr]).toEqual([
        2,
        expect.stringMatching(/error PAYLOAD_INVALID: lines 1–2: payload for task type "cli.import" fails its schema/),
      ]);
      expect((await tl(['list', '--type', 'cli.import', '--json'])).json<{ tasks: Task[] }>().tasks).toEqual([]);
      const noType = await tl(['submit', '--file', schemaBad]);
      expect([noType.code, noType.stderr]).toEqual([2, expect.stringContaining('--file needs the task type')]);
      const noFile = await tl(['submit', 'cli.x', '--file', 'nope.jsonl']);
      expect([noFile.code, noFile.stderr]).toEqual([2, expect.stringContaining('file nope.jsonl does not exist')]);
      writeFileSync(join(dir, 'rows.txt'), '{}\n');
      const noFormat = await tl(['submit', 'cli.x', '--file', 'rows.txt']);
      expect([noFormat.code, noFormat.stderr]).toEqual([2, expect.stringContaining('give --format jsonl or --format csv')]);
    });
  });

  describe('control', () => {
    it('pauses, reschedules, resumes and cancels; refuses what the status forbids', async () => {
      const id = await submit('cli.echo', {});
      expect((await tl(['pause', id, '--json'])).json()).toEqual({ id, status: 'PAUSED' });
      const before = Date.now();
      const moved = await tl(['reschedule', id, '--in', '10m', '--json']);
      expect(moved.code, moved.stderr).toBe(0);
      expect(new Date(moved.json<{ availableAt: string }>().availableAt).getTime()).toBeGreaterThan(before + 9 * 60_000);
      expect((await get(id)).status).toBe('PAUSED');
      const at = await tl(['reschedule', id, '--at', '2031-05-01T08:00:00Z', '--json']);
      expect(at.json()).toMatchObject({ availableAt: '2031-05-01T08:00:00.000Z' });
      expect((await tl(['resume', id])).stdout).toBe(`task ${id} resumed (now QUEUED)\n`);
      const retryQueued = await tl(['retry', id]);
      expect([retryQueued.code, retryQueued.stderr]).toEqual([1, `error INVALID_TRANSITION: cannot retry task ${id}: it is QUEUED\n`]);
      expect((await tl(['cancel', id, '--json'])).json()).toEqual({ id, outcome: 'CANCELLED' });
      const again = await tl(['cancel', id]);
      expect([again.code, again.stderr]).toEqual([1, `error INVALID_TRANSITION: cannot cancel task ${id}: it is CANCELLED\n`]);
      const neither = await tl(['reschedule', id]);
      expect([neither.code, neither.stderr]).toEqual([2, 'error USAGE: reschedule needs exactly one of --at or --in\n']);
      const badTime = await tl(['reschedule', id, '--at', 'tomorrow']);
      expect([badTime.code, badTime.stderr]).toEqual([2, expect.stringContaining('must be an ISO 8601 time')]);
      for (const command of ['pause', 'resume', 'retry']) {
        const missing = await tl([command, UNKNOWN_ID]);
        expect([command, missing.code, missing.stderr]).toEqual([command, 3, `error NOT_FOUND: task "${UNKNOWN_ID}" not found\n`]);
      }
    });

    it('edits a waiting task: payload, priority, start, deadline (none removes it), attempts; refuses an ended or unknown task', async () => {
      const id = await submit('cli.echo', { n: 1 }, '--delay', '1h');
      const flags = ['--payload', '{"n":2}', '--priority', '7', '--at', '2031-05-01T08:00:00Z', '--deadline', '2031-06-01T00:00:00Z', '--max-attempts', '9'];
      const edited = await tl(['edit', id, ...flags, '--json']);
      expect(edited.code, edited.stderr).toBe(0);
      expect(edited.json()).toMatchObject({ id, status: 'QUEUED', changed: ['payload', 'priority', 'availableAt', 'deadlineAt', 'maxAttempts'] });
      expect(await get(id)).toMatchObject({
        payload: { n: 2 },
        priority: 7,
        availableAt: '2031-05-01T08:00:00.000Z',
        deadlineAt: '2031-06-01T00:00:00.000Z',
        maxAttempts: 9,
      });
      const cleared = await tl(['edit', id, '--deadline', 'none']);
      expect(cleared.stderr).toBe('');
      expect(cleared.stdout).toBe(`task ${id} edited (deadlineAt), still QUEUED\n`);
      expect((await get(id)).deadlineAt).toBeNull();
      const nothing = await tl(['edit', id]);
      expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringContaining('edit needs one of --payload')]);
      const badJson = await tl(['edit', id, '--payload', '{']);
      expect(badJson.code).toBe(2);
      await tl(['cancel', id]);
      const ended = await tl(['edit', id, '--priority', '1']);
      expect([ended.code, ended.stderr]).toEqual([1, `error INVALID_TRANSITION: cannot edit task ${id}: it is CANCELLED\n`]);
      const missing = await tl(['edit', UNKNOWN_ID, '--priority', '1']);
      expect([missing.code, missing.stderr]).toEqual([3, `error NOT_FOUND: task "${UNKNOWN_ID}" not found\n`]);
    });

    it('bulk: a dry run without --yes changes nothing; --yes runs it here with a summary; list, show and a stop of an ended one', async () => {
      const tag = `bulk-${Date.now()}`;
      const ids = [];
      for (let i = 0; i < 3; i += 1) ids.push(await submit('cli.echo', { tag, i }, '--delay', '1h'));
      const dry = await tl(['bulk', 'pause', '--type', 'cli.echo', '--payload', `tag="${tag}"`]);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('3 task(s) in QUEUED, RETRY_WAIT, BLOCKED would be paused');
      expect(dry.stdout).toContain('nothing changed: run again with --yes');
      expect((await get(ids[0]!)).status).toBe('QUEUED');
      const ran = await tl(['bulk', 'pause', '--type', 'cli.echo', '--payload', `tag="${tag}"`, '--yes', '--batch-size', '2', '--json']);
      expect(ran.code, ran.stderr).toBe(0);
      const op = ran.json() as { id: string; status: string; changed: number; actor: { id: string } };
      expect(op).toMatchObject({ status: 'SUCCEEDED', matched: 3, processed: 3, changed: 3, actor: { id: `cli:${userInfo().username}` } });
      for (const id of ids) expect((await get(id)).status).toBe('PAUSED');
      const human = await tl(['bulk', 'resume', '--id', ids[0]!, '--id', ids[1]!, '--yes']);
      expect(human.stdout).toMatch(/: succeeded; resumed 2 of 2 looked at \(2 matched when it started\)\n$/);
      const listed = await tl(['bulk', 'list', '--json']);
      expect((listed.json() as { id: string }[]).map((o) => o.id)).toContain(op.id);
      const shown = await tl(['bulk', 'show', op.id]);
      expect(shown.stdout).toContain(`filter: {"taskType":"cli.echo","payload":[{"path":"tag","equals":"${tag}"}]}`);
      const stopped = await tl(['bulk', 'stop', op.id, '--json']);
      expect(stopped.json()).toMatchObject({ id: op.id, status: 'SUCCEEDED' }); // ended already: nothing to stop
      const missing = await tl(['bulk', 'show', UNKNOWN_ID]);
      expect(missing.code).toBe(3);
      const refused = await tl(['bulk', 'resume', '--status', 'FAILED', '--yes']);
      expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining('resume applies to PAUSED tasks')]);
    });

    it('records its actions as the OS user and lists them with `actions`, oldest first', async () => {
      const id = await submit('cli.echo', {}, '--delay', '1h');
      await tl(['pause', id]);
      await tl(['reschedule', id, '--at', '2031-05-01T08:00:00Z']);
      await tl(['resume', id]);
      const me = `cli:${userInfo().username}`;
      const listed = await tl(['actions', id, '--json']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.json<{ actions: Record<string, unknown>[] }>().actions.map((a) => [a.action, a.fromStatus, a.toStatus, a.actor, a.detail])).toEqual([
        ['PAUSE', 'QUEUED', 'PAUSED', me, null],
        ['RESCHEDULE', 'PAUSED', 'PAUSED', me, '2031-05-01T08:00:00.000Z'],
        ['RESUME', 'PAUSED', 'QUEUED', me, null],
      ]);
      const table = (await tl(['actions', id])).stdout.split('\n');
      expect(table[0]).toMatch(/^AT\s+ACTION\s+FROM\s+TO\s+BY\s+DETAIL/);
      expect(table[1]).toMatch(new RegExp(`PAUSE\\s+QUEUED\\s+PAUSED\\s+${me}`));
      expect((await tl(['actions', id, '--limit', '1', '--json'])).json<{ actions: { action: string }[] }>().actions.map((a) => a.action)).toEqual(['RESUME']);
      const missing = await tl(['actions', UNKNOWN_ID]);
      expect([missing.code, missing.stderr]).toEqual([3, `error NOT_FOUND: task "${UNKNOWN_ID}" not found\n`]);
    });

    it('cancels many, saying which could not be cancelled (exit 3 when one is unknown, 1 when one is finished)', async () => {
      const [a, b] = [await submit('cli.echo', {}), await submit('cli.echo', {})];
      const withUnknown = await tl(['cancel', a, UNKNOWN_ID, '--json']);
      expect(withUnknown.code).toBe(3);
      expect(withUnknown.json()).toEqual({ cancelled: 1, cancelRequested: 0, notCancelled: [{ id: UNKNOWN_ID, reason: 'NOT_FOUND' }] });
      const withFinished = await tl(['cancel', a, b]);
      expect(withFinished.code).toBe(1);
      expect(withFinished.stdout).toBe(`cancelled: 1, asked to stop: 0, not cancelled: 1\n  ${a}: already CANCELLED\n`);
    });
  });

  describe('diagnose, analyze, dlq, retry, workers — with a worker running the fixture tasks', () => {
    it('diagnoses a task nobody runs, then one that failed for good; analyzes; replays and archives dead letters', async () => {
      const waiting = await submit('cli.nobody', {});
      const diagnosis = await tl(['diagnose', waiting, '--json']);
      expect(diagnosis.code, diagnosis.stderr).toBe(0);
      expect(diagnosis.json()).toMatchObject({
        task: { id: waiting, status: 'QUEUED' },
        attempts: [],
        failures: [],
        lease: { status: 'NO_LEASE', remainingSeconds: null },
        causes: [{ code: 'NO_WORKER' }],
        workers: { forType: [] },
        controlPlane: { status: 'UP' },
      });
      const missing = await tl(['diagnose', UNKNOWN_ID]);
      expect([missing.code, missing.stderr]).toEqual([3, `error NOT_FOUND: task "${UNKNOWN_ID}" not found\n`]);

      let stop!: (signal: string) => void;
      const worker = tl(
        ['worker', join(FIXTURES, 'tasks.ts'), '--concurrency', '2', '--poll', '50ms', '--worker-id', `cli-${Date.now()}`, '--log-level', 'warn'],
        { stop: new Promise((resolve) => (stop = resolve)) },
      );
      try {
        const [failing, failing2, echo] = [await submit('cli.fail', { n: 1 }), await submit('cli.fail', { n: 2 }), await submit('cli.echo', { value: 'hi' })];
        for (const id of [failing, failing2]) await waitFor(async () => (await get(id)).status === 'FAILED', `task ${id} FAILED`, 20_000, 50);
        await waitFor(async () => (await get(echo)).status === 'SUCCESS', 'echo SUCCESS', 20_000, 50);
        expect((await get(echo)).result).toEqual({ echoed: { value: 'hi' } });

        const workers = (await tl(['workers', '--json'])).json<{ workers: { workerId: string; taskTypes: string[] }[] }>().workers;
        expect(workers.find((w) => w.workerId.startsWith('cli-'))?.taskTypes.sort()).toEqual(['cli.echo', 'cli.fail', 'cli.steps', 'cli.wait']);

        // Durable steps: listed with `steps`, summed up by diagnose.
        const stepped = await submit('cli.steps', {});
        await waitFor(async () => (await get(stepped)).status === 'SUCCESS', 'cli.steps SUCCESS', 20_000, 50);
        const steps = await tl(['steps', stepped, '--json']);
        expect(steps.code, steps.stderr).toBe(0);
        expect(steps.json<{ steps: Record<string, unknown>[] }>().steps.map((s) => [s.name, s.seq, s.attempt, s.current, s.result])).toEqual([
          ['fetch', 1, 1, true, { rows: 3 }],
          ['store', 2, 1, true, { stored: 3 }],
        ]);
        const stepTable = (await tl(['steps', stepped])).stdout.split('\n');
        expect(stepTable[0]).toMatch(/^CYCLE\s+#\s+STEP\s+ATTEMPT\s+WORKER\s+RECORDED\s+RESULT/);
        expect(stepTable[2]).toMatch(/^current\s+2\s+store\s+1\s+cli-.*\{"stored":3\}$/);
        expect((await tl(['diagnose', stepped, '--json'])).json()).toMatchObject({ steps: { completed: 2, last: { name: 'store', attempt: 1 } } });
        expect((await tl(['diagnose', stepped])).stdout).toMatch(/=== Steps ===\n2 steps completed, last: store at \S+ \(attempt 1\)/);
        expect((await tl(['steps', UNKNOWN_ID])).code).toBe(3);

        // Per-task logs (ctx.log): `logs`, as JSON and as a table; one attempt's; an unknown task.
        const logs = await tl(['logs', stepped, '--json']);
        expect(logs.code, logs.stderr).toBe(0);
        expect(logs.json<{ logs: Record<string, unknown>[] }>().logs.map((l) => [l.seq, l.attempt, l.level, l.message, l.fields])).toEqual([
          [1, 1, 'info', 'fetched rows', { rows: 3, password: '[REDACTED]' }],
        ]);
        const logTable = (await tl(['logs', stepped])).stdout.split('\n');
        expect(logTable[0]).toMatch(/^TIME\s+ATTEMPT\s+LEVEL\s+MESSAGE\s+FIELDS/);
        expect(logTable[1]).toMatch(/^\S+\s+1\s+INFO\s+fetched rows\s+\{"rows":3,"password":"\[REDACTED\]"\}$/);
        expect((await tl(['logs', stepped, '--attempt', '2', '--json'])).json()).toEqual({ logs: [] });
        expect((await tl(['logs', stepped, '--attempt', '0'])).code).not.toBe(0);
        expect((await tl(['logs', UNKNOWN_ID])).code).toBe(3);

        const failed = (await tl(['diagnose', failing, '--json'])).json<Record<string, unknown>>();
        expect(failed).toMatchObject({
          task: { status: 'FAILED', lastErrorCode: 'FIXTURE_BROKEN' },
          attempts: [{ attempt: 1, outcome: 'FAILED', errorCode: 'FIXTURE_BROKEN' }],
          failures: [{ errorCode: 'FIXTURE_BROKEN', retryable: false }],
          causes: [{ code: 'DEAD_LETTERED' }],
        });
        expect((failed.workers as { forType: unknown[] }).forType).toHaveLength(1);
        const human = (await tl(['diagnose', failing])).stdout;
        for (const section of [
          '=== Task ===',
          '=== Attempts (1) ===',
          '=== Last failures ===',
          '=== Lease ===',
          '=== Workers for cli.fail (1 of',
          '=== Control plane ===',
          '=== Verdict ===',
        ]) {
          expect(human).toContain(section);
        }
        expect(human).toContain('the task failed for good (FIXTURE_BROKEN)');
        // the first verdict line carries its code, like the "also:" lines after it
        expect(human).toMatch(/=== Verdict ===\n.*the task failed for good .* replay it \(DEAD_LETTERED\)$/m);

        const analysis = (await tl(['analyze', 'cli.fail', '--hours', '1', '--json'])).json<Record<string, unknown>>();
        expect(analysis).toMatchObject({
          taskType: 'cli.fail',
          hours: 1,
          statusCounts: { FAILED: 2 },
          execution: { count: 2 },
          queueWait: { count: 2 },
          failures: [{ errorCode: 'FIXTURE_BROKEN', count: 2, share: 1 }],
        });
        expect((await tl(['analyze', 'cli.fail'])).stdout).toMatch(/FIXTURE_BROKEN\s+2\s+100.0 %/);
        expect(analysis.oldestWaiting).toBeNull();
        // a waiting task shows up: the age of the oldest one that is due and unclaimed (no worker runs this type)
        expect((await tl(['submit', 'cli.unrun', '{}'])).code).toBe(0);
        const unrun = (await tl(['analyze', 'cli.unrun', '--json'])).json<{ oldestWaiting: { since: string; ageMs: number } | null }>();
        expect(unrun.oldestWaiting).toEqual({ since: expect.any(String), ageMs: expect.any(Number) });
        expect((await tl(['analyze', 'cli.unrun'])).stdout).toMatch(/oldest waiting\s+\S+.*\(due since \d{4}-/);

        const list = (await tl(['dlq', 'list', '--type', 'cli.fail', '--json'])).json<{
          deadLetters: { id: string; originalTaskId: string }[];
          waiting: number;
        }>();
        expect(list.waiting).toBe(2);
        const letterOf = (task: string): string => list.deadLetters.find((d) => d.originalTaskId === task)!.id;
        const replayed = await tl(['dlq', 'replay', letterOf(failing), '--json']);
        expect(replayed.json()).toEqual({ replayed: 1, results: [{ id: letterOf(failing), outcome: 'REPLAYED', taskId: failing }] });
        const again = await tl(['dlq', 'replay', letterOf(failing)]);
        expect([again.code, again.stdout]).toEqual([1, expect.stringContaining('ALREADY_REPLAYED')]);
        const batch = await tl(['dlq', 'replay-batch', letterOf(failing2), UNKNOWN_ID, '--json']);
        expect(batch.code).toBe(3);
        expect(batch.json<{ results: { outcome: string }[] }>().results.map((r) => r.outcome)).toEqual(['REPLAYED', 'NOT_FOUND']);
        // Replayed: the worker runs them again, and they fail again (a new dead letter each).
        for (const id of [failing, failing2])
          await waitFor(async () => (await get(id)).attemptCount === 2 && (await get(id)).status === 'FAILED', `task ${id} failed again`, 20_000, 50);
        const retried = await tl(['retry', failing, '--json']);
        expect(retried.json()).toMatchObject({ id: failing });
        await waitFor(async () => (await get(failing)).attemptCount === 3 && (await get(failing)).status === 'FAILED', 'retried task failed again', 20_000, 50);
        const waitingLetters = (await tl(['dlq', 'list', '--type', 'cli.fail', '--json'])).json<{
          deadLetters: { id: string; replayedAt: string | null }[];
          waiting: number;
        }>();
        expect(waitingLetters.waiting).toBe(3);
        const open = waitingLetters.deadLetters.filter((d) => d.replayedAt === null).map((d) => d.id);
        const archived = await tl(['dlq', 'archive', ...open, '--json']);
        expect(archived.json()).toEqual({ archived: 3, requested: 3 });
        expect((await tl(['dlq', 'list', '--json'])).json()).toMatchObject({ waiting: 0 });
        const archivedAgain = await tl(['dlq', 'archive', open[0]!]);
        expect([archivedAgain.code, archivedAgain.stdout]).toEqual([3, expect.stringContaining('archived 0 of 1')]);

        const kept = await tl(['dlq', 'clean', '--retention-days', '1', '--json']);
        expect(kept.code, kept.stderr).toBe(0);
        expect(kept.json()).toMatchObject({ deleted: 0, batches: 1 });
        const cleaned = await tl(['dlq', 'clean', '--retention-days', '0', '--batch-size', '2']);
        expect([cleaned.code, cleaned.stdout]).toEqual([0, expect.stringMatching(/^deleted 3 archived dead letters in 2 batches/)]);
        const left = (await tl(['dlq', 'list', '--type', 'cli.fail', '--json'])).json<{ deadLetters: { id: string; replayedAt: string | null }[] }>();
        expect(left.deadLetters.map((d) => d.replayedAt === null)).toEqual([false, false]);
        const negative = await tl(['dlq', 'clean', '--retention-days', '-1']);
        expect([negative.code, negative.stderr]).toEqual([2, expect.stringContaining('must be a number from 0 to 100000')]);
        const noRetention = await tl(['dlq', 'clean']);
        expect([noRetention.code, noRetention.stderr]).toEqual([2, expect.stringContaining("required option '--retention-days <n>' not specified")]);
      } finally {
        stop('SIGTERM');
        const stopped = await worker;
        expect(stopped.code, stopped.stderr).toBe(0);
      }
    });
  });

  describe('policy, cleanup, workers', () => {
    it('history: the stored queue history of the last hour, per minute, of one type; a bad range refused', async () => {
      const store = await openStore(target.url());
      try {
        const minute = Math.floor((await store.now()).getTime() / 60_000) * 60_000 - 60_000;
        const counts = { ...emptyCounts(), submitted: 5, started: 4, succeeded: 3, failed: 1 };
        await (await historyStoreOf(store)).add('cli-p', [{ minuteStart: new Date(minute), taskType: 'cli.h', counts }]);
      } finally {
        await store.close();
      }
      const json = await tl(['history', '--type', 'cli.h', '--json']);
      expect(json.code, json.stderr).toBe(0);
      const series = json.json<{ step: string; points: { submitted: number; failed: number }[] }>();
      expect(series.step).toBe('minute');
      expect(series.points.reduce((sum, p) => sum + p.submitted, 0)).toBe(5);
      expect((await tl(['history', '--type', 'cli.h'])).stdout).toMatch(/^AT\s+SUBMITTED\s+STARTED.*\n\S+\s+5\s+4\s+3\s+1\s+0\s/);
      expect((await tl(['history', '--type', 'other'])).stdout).toMatch(/no history in this range/);
      const bad = await tl(['history', '--range', '2d']);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/1h, 24h, 7d/);
    });

    it("sets, shows and resets a type's policy and the global one", async () => {
      const set = await tl(['policy', 'set', 'cli.p', '--max-concurrency', '3', '--enabled', 'false', '--json']);
      expect(set.code, set.stderr).toBe(0);
      expect(set.json()).toMatchObject({ policy: { policyKey: 'TYPE:cli.p', maxConcurrency: 3, enabled: false, maxAttempts: null } });
      const merged = await tl(['policy', 'set', 'cli.p', '--max-attempts', '4', '--max-concurrency', 'default', '--json']);
      expect(merged.json()).toMatchObject({ policy: { maxConcurrency: null, maxAttempts: 4, enabled: false } });
      await tl(['policy', 'set', '--retry-base-delay-ms', '500']);
      const all = (await tl(['policy', 'get', '--json']))
        .json<{ policies: { policyKey: string }[] }>()
        .policies.map((p) => p.policyKey)
        .sort();
      expect(all).toEqual(['GLOBAL', 'TYPE:cli.p']);
      expect((await tl(['policy', 'get', 'cli.p', '--json'])).json()).toMatchObject({ policy: { maxAttempts: 4 } });
      expect((await tl(['policy', 'get', 'cli.p'])).stdout).toMatch(/^POLICY\s+MAX CONCURRENCY.*\nTYPE:cli.p\s+default\s+4\s+default\s+false/);
      expect((await tl(['policy', 'reset', 'cli.p', '--json'])).json()).toEqual({ policyKey: 'TYPE:cli.p', removed: true });
      expect((await tl(['policy', 'reset', 'cli.p', '--json'])).json()).toEqual({ policyKey: 'TYPE:cli.p', removed: false });
      expect((await tl(['policy', 'get', 'cli.p', '--json'])).json()).toEqual({ policy: null });
      expect((await tl(['policy', 'reset'])).stdout).toBe('GLOBAL reset to the defaults\n');
      const nothing = await tl(['policy', 'set', 'cli.p']);
      expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringContaining('policy set needs at least one of')]);
      const badBool = await tl(['policy', 'set', 'cli.p', '--enabled', 'yes']);
      expect([badBool.code, badBool.stderr]).toEqual([2, expect.stringContaining("argument 'yes' is invalid. must be true or false")]);
      const badAttempts = await tl(['policy', 'set', 'cli.p', '--max-attempts', '0']);
      expect(badAttempts.code).toBe(2);
      const zero = await tl(['policy', 'set', 'cli.p', '--max-concurrency', '0']);
      expect([zero.code, zero.stderr]).toEqual([2, expect.stringContaining('to stop claiming these tasks, use --enabled false')]);
    });

    it("sets, shows and resets an owner's policy; owner policies hold a concurrency limit only", async () => {
      const set = await tl(['policy', 'set', '--owner', 'acme', '--max-concurrency', '2', '--json']);
      expect(set.code, set.stderr).toBe(0);
      expect(set.json()).toMatchObject({ policy: { policyKey: 'OWNER:acme', taskType: null, maxConcurrency: 2, enabled: true } });
      expect((await tl(['policy', 'get', '--owner', 'acme', '--json'])).json()).toMatchObject({ policy: { maxConcurrency: 2 } });
      const attempts = await tl(['policy', 'set', '--owner', 'acme', '--max-attempts', '3']);
      expect([attempts.code, attempts.stderr]).toEqual([2, expect.stringContaining('maxConcurrency and enabled only')]);
      const both = await tl(['policy', 'get', 'cli.p', '--owner', 'acme']);
      expect([both.code, both.stderr]).toEqual([2, expect.stringContaining('not both')]);
      expect((await tl(['policy', 'reset', '--owner', 'acme', '--json'])).json()).toEqual({ policyKey: 'OWNER:acme', removed: true });
      expect((await tl(['policy', 'get', '--owner', 'acme'])).stdout).toBe("no policy for OWNER:acme: the workers' defaults apply\n");
    });

    it("sets, shows and resets a rate key's rate, and a type's rate with --rate N/period", async () => {
      const set = await tl(['policy', 'set', '--rate-key', 'partner:*', '--rate', '100/1m', '--json']);
      expect(set.code, set.stderr).toBe(0);
      expect(set.json()).toMatchObject({ policy: { policyKey: 'KEY:partner:*', rateLimit: 100, ratePeriodMs: 60_000 } });
      expect((await tl(['policy', 'get', '--rate-key', 'partner:*'])).stdout).toMatch(/KEY:partner:\*.*100\/60000ms/);
      const typed = await tl(['policy', 'set', 'cli.p', '--rate', '5/500ms', '--json']);
      expect(typed.json()).toMatchObject({ policy: { policyKey: 'TYPE:cli.p', rateLimit: 5, ratePeriodMs: 500 } });
      expect((await tl(['policy', 'set', 'cli.p', '--rate', 'none', '--json'])).json()).toMatchObject({ policy: { rateLimit: null, ratePeriodMs: null } });
      const bad = await tl(['policy', 'set', 'cli.p', '--rate', '5 per minute']);
      expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('must be N/period')]);
      const concurrency = await tl(['policy', 'set', '--rate-key', 'k', '--max-concurrency', '3']);
      expect([concurrency.code, concurrency.stderr]).toEqual([2, expect.stringContaining('rateLimit and ratePeriodMs only')]);
      expect((await tl(['policy', 'reset', '--rate-key', 'partner:*', '--json'])).json()).toEqual({ policyKey: 'KEY:partner:*', removed: true });
      await tl(['policy', 'reset', 'cli.p']);
    });

    it('adaptive set, show, override (a policy set overrides too), resume, history, off; estimate of a waiting task', async () => {
      const set = await tl(['adaptive', 'set', 'cli.a', '--max', '12', '--min', '2', '--codes', 'HTTP_429,HTTP_503', '--cooldown', '5s', '--json']);
      expect(set.code, set.stderr).toBe(0);
      expect(set.json()).toMatchObject({ adaptive: { taskType: 'cli.a', currentLimit: 12, minLimit: 2, codes: ['HTTP_429', 'HTTP_503'], cooldownMs: 5000 } });
      expect((await tl(['adaptive', 'show', 'cli.a'])).stdout).toMatch(/\ncli\.a\s+adaptive: 12 \(2\.\.12\)\s+0\.2 of HTTP_429,HTTP_503/);
      const override = await tl(['adaptive', 'override', 'cli.a', '4', '--for', '1h', '--json']);
      expect(override.json()).toMatchObject({ adaptive: { overridden: true, currentLimit: 4 } });
      expect((await tl(['adaptive', 'resume', 'cli.a', '--json'])).json()).toMatchObject({ adaptive: { overridden: false } });
      await tl(['policy', 'set', 'cli.a', '--max-concurrency', '6']);
      expect((await tl(['adaptive', 'show', 'cli.a'])).stdout).toContain('adaptive: 6 (2..12), overridden until resumed');
      const history = (await tl(['adaptive', 'history', 'cli.a', '--json'])).json<{ changes: { kind: string; actor: string }[] }>().changes;
      expect(history.map((c) => c.kind)).toEqual(['override', 'resume', 'override', 'set']);
      expect(history[0]!.actor).toMatch(/^cli:/);
      expect((await tl(['adaptive', 'history', 'cli.a'])).stdout).toMatch(/^AT\s+KIND\s+LIMIT\s+ACTOR\s+CAUSE\n\S+\s+override\s+4 → 6\s+cli:/);
      expect((await tl(['adaptive', 'off', 'cli.a', '--json'])).json()).toMatchObject({ adaptive: { enabled: false, currentLimit: 6 } });
      const none = await tl(['adaptive', 'off', 'cli.none']);
      expect(none.code).toBe(3);
      const bad = await tl(['adaptive', 'set', 'cli.a', '--max', '3', '--min', '5']);
      expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('minLimit (5) must not exceed maxLimit (3)')]);
      const waiting = await submit('cli.nobody', {});
      const estimate = await tl(['estimate', waiting, '--json']);
      expect(estimate.code, estimate.stderr).toBe(0);
      expect(estimate.json()).toMatchObject({ estimate: { taskId: waiting, state: 'WAITING', binds: [{ kind: 'type' }, { kind: 'global' }] } });
      expect((await tl(['estimate', waiting])).stdout).toMatch(/state\s+WAITING[\s\S]*LIMIT\s+POSITION\s+OF LIMIT\s+PACE\s+WAIT\s+REASON\ntype\s+1\s/);
      expect((await tl(['estimate', UNKNOWN_ID])).code).toBe(3);
    });

    it('sets, lists, disables, enables and deletes a schedule; a bad cron or time zone is a typed error', async () => {
      const set = await tl([
        'schedule',
        'set',
        'cli.nightly',
        'cli.p',
        '--cron',
        '30 2 * * *',
        '--time-zone',
        'Europe/Berlin',
        '--payload',
        '{"n":1}',
        '--catch-up',
        '2',
        '--json',
      ]);
      expect(set.code, set.stderr).toBe(0);
      expect(set.json()).toMatchObject({
        schedule: { key: 'cli.nightly', taskType: 'cli.p', cron: '30 2 * * *', timeZone: 'Europe/Berlin', payload: { n: 1 }, catchUp: 2, enabled: true },
      });
      const listed = await tl(['schedule', 'list', '--next', '2', '--json']);
      const [nightly] = listed.json<{ schedules: { key: string; nextRuns: string[] }[] }>().schedules;
      expect(nightly!.key).toBe('cli.nightly');
      expect(nightly!.nextRuns.map((run) => new Date(run).getUTCMinutes())).toEqual([30, 30]);
      expect((await tl(['schedule', 'list'])).stdout).toMatch(/^SCHEDULE\s+TYPE\s+CRON.*\ncli.nightly\s+cli.p\s+30 2 \* \* \*\s+Europe\/Berlin\s+true/);
      expect((await tl(['schedule', 'disable', 'cli.nightly', '--json'])).json()).toMatchObject({ schedule: { enabled: false, nextRuns: [] } });
      expect((await tl(['schedule', 'enable', 'cli.nightly', '--json'])).json()).toMatchObject({ schedule: { enabled: true } });
      const badCron = await tl(['schedule', 'set', 'cli.bad', 'cli.p', '--cron', '0 0 31 2 * * *', '--json']);
      expect([badCron.code, badCron.json()]).toEqual([2, { error: expect.objectContaining({ code: 'INVALID_CRON', field: 'cron' }) }]);
      const badZone = await tl(['schedule', 'set', 'cli.bad', 'cli.p', '--cron', '0 3 * * *', '--time-zone', 'Europe/Gotham']);
      expect([badZone.code, badZone.stderr]).toEqual([2, expect.stringMatching(/^error INVALID_TIME_ZONE: /)]);
      expect((await tl(['schedule', 'delete', 'cli.nightly', '--json'])).json()).toEqual({ key: 'cli.nightly', deleted: true });
      expect((await tl(['schedule', 'get', 'cli.nightly', '--json'])).json()).toEqual({ schedule: null });
      expect((await tl(['schedule', 'delete', 'cli.nightly'])).code).not.toBe(0);
    });

    it('subscribes types to an event, publishes it (once per key), lists and removes subscriptions', async () => {
      const added = await tl(['subscriptions', 'add', 'cli.order-placed', 'cli.p', '--priority', '7', '--json']);
      expect(added.code, added.stderr).toBe(0);
      expect(added.json()).toMatchObject({ subscription: { event: 'cli.order-placed', taskType: 'cli.p', priority: 7, maxAttempts: null } });
      expect((await tl(['subscriptions', 'add', 'cli.order-placed', 'cli.echo', '--max-attempts', '2'])).code).toBe(0);
      expect((await tl(['subscriptions', 'list'])).stdout).toMatch(/^EVENT\s+TYPE\s+PRIORITY\s+MAX ATTEMPTS.*\ncli.order-placed\s+cli.echo\s+-\s+2/);
      const listed = await tl(['subscriptions', 'list', '--type', 'cli.p', '--json']);
      expect(listed.json<{ subscriptions: { taskType: string }[] }>().subscriptions.map((s) => s.taskType)).toEqual(['cli.p']);

      const published = await tl(['publish', 'cli.order-placed', '{"order":1}', '--idempotency-key', 'o-1', '--json']);
      expect(published.code, published.stderr).toBe(0);
      const { tasks } = published.json<{ tasks: { id: string; taskType: string; created: boolean }[] }>();
      expect(tasks.map((t) => [t.taskType, t.created])).toEqual([
        ['cli.echo', true],
        ['cli.p', true],
      ]);
      expect(await get(tasks[1]!.id)).toMatchObject({ priority: 7, payload: { order: 1 }, idempotencyKey: 'event:cli.order-placed:o-1' });
      const again = await tl(['publish', 'cli.order-placed', '{"order":1}', '--idempotency-key', 'o-1', '--json']);
      expect(again.json<{ tasks: { created: boolean }[] }>().tasks.map((t) => t.created)).toEqual([false, false]);
      expect((await tl(['publish', 'cli.nobody-listens'])).stdout).toBe('no task type subscribes to cli.nobody-listens: nothing created\n');
      const badEvent = await tl(['publish', 'has:colon', '--json']);
      expect([badEvent.code, badEvent.json()]).toEqual([2, { error: expect.objectContaining({ code: 'VALIDATION', field: 'event' }) }]);

      expect((await tl(['subscriptions', 'remove', 'cli.order-placed', 'cli.p', '--json'])).json()).toEqual({
        event: 'cli.order-placed',
        taskType: 'cli.p',
        removed: true,
      });
      const missing = await tl(['subscriptions', 'remove', 'cli.order-placed', 'cli.p']);
      expect([missing.code, missing.stderr]).toEqual([3, expect.stringMatching(/^error NOT_FOUND: /)]);
    });

    it('submits into a sequence: the second task waits; lists, shows, skips and sets the policy of its key', async () => {
      const key = `cli-seq-${Date.now()}`;
      const first = await submit('cli.echo', { n: 1 }, '--sequence-key', key, '--delay', '1h');
      const second = await submit('cli.echo', { n: 2 }, '--sequence-key', key, '--sequence-on-dead-letter', 'SKIP');
      expect([(await get(first)).status, (await get(second)).status]).toEqual(['QUEUED', 'BLOCKED']);
      const listed = await tl(['sequences', 'list', '--json']);
      expect(listed.json<{ sequences: unknown[] }>().sequences).toContainEqual(
        expect.objectContaining({ sequenceKey: key, waiting: 1, blocked: false, onDeadLetter: 'SKIP', head: expect.objectContaining({ id: first }) }),
      );
      expect((await tl(['sequences', 'show', key])).stdout).toMatch(
        new RegExp(`^KEY\\s+HEAD\\s+HEAD STATUS\\s+WAITING\\s+BLOCKED\\s+ON DEAD LETTER\\n${key}\\s+${first}\\s+QUEUED\\s+1\\s+no\\s+SKIP`),
      );
      expect((await tl(['sequences', 'list', '--blocked'])).stdout).not.toContain(key);
      expect((await tl(['sequences', 'skip', key])).stdout).toBe(`sequence ${key}: its head is not dead-lettered, nothing skipped\n`);
      expect((await tl(['sequences', 'policy', key, 'block', '--json'])).json()).toMatchObject({ sequenceKey: key, onDeadLetter: 'BLOCK' });
      const bad = await tl(['sequences', 'policy', key, 'later']);
      expect(bad.code).toBe(2);
      const missing = await tl(['sequences', 'show', 'cli-no-such-key']);
      expect([missing.code, missing.stderr]).toEqual([3, expect.stringMatching(/^error NOT_FOUND: /)]);
    });

    it('cleans up in batches and keeps tasks inside the retention', async () => {
      const id = await submit('cli.echo', {});
      await tl(['cancel', id]);
      const cleaned = await tl(['cleanup', '--retention-days', '1', '--batch-size', '10', '--json']);
      expect(cleaned.code, cleaned.stderr).toBe(0);
      expect(cleaned.json()).toMatchObject({ tasks: 0, attempts: 0, failures: 0, deadLettersArchived: 0, batches: 1 });
      expect((await get(id)).status).toBe('CANCELLED');
      const noRetention = await tl(['cleanup']);
      expect([noRetention.code, noRetention.stderr]).toEqual([2, expect.stringContaining("required option '--retention-days <n>' not specified")]);
      const tooShort = await tl(['cleanup', '--retention-days', '0.5']);
      expect([tooShort.code, tooShort.stderr]).toEqual([2, expect.stringContaining('error VALIDATION: retentionDays must be at least 1')]);
    });
  });
}

/**
 * Bad input from producers (FAULTS.md 19, 21), on every store, with a real
 * worker process beside it:
 *
 * - Malformed payloads — not JSON, failing their schema, NUL characters,
 *   lone surrogates, JSON nested 10,000 deep — through the client, the
 *   HTTP API and the store: each is refused at submit with a typed error
 *   (nothing written), or stored as the same JSON value and run, or, when it
 *   fails its schema only at run time, dead-lettered after one attempt.
 *   Never a 500, never an untyped error; the worker survives them all.
 * - Hostile identifiers — task types (and owners, idempotency keys) made of
 *   SQL, quotes, dollar quotes, or 10,000 characters: stored verbatim and run
 *   by their exact type, or refused with a typed error; the schema intact.
 *
 * - Payload text that is not JSON handed to the store itself (the Store is
 *   public): refused as VALIDATION, nothing written, claims unharmed (store/
 *   base.ts). Before the fix PostgreSQL wrote the row and then threw a bare
 *   SyntaxError, and every later claim and listing of the type threw on it;
 *   SQLite and MySQL refused it as STORE_UNAVAILABLE, which reads as
 *   transient; SQLite kept a raw lone surrogate as U+FFFD.
 */
import { expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import { waitFor } from '../helpers/wait.js';
import { allTasks } from './invariants.js';
import { startTestServer, type Answer } from '../server/harness.js';
import { FAULT_PAYLOAD_SCHEMA } from './fault-payload.js';
import { TIMING, type FaultEnvironment } from './environment.js';

const G = Scope.global();
export const SETTLE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;
/** The codes of a refusal that names the input as the problem (not STORE_UNAVAILABLE, which reads as transient). */
const INPUT_ERRORS = ['VALIDATION', 'PAYLOAD_INVALID', 'PAYLOAD_TOO_LARGE'];
const HOSTILE_TYPES = ["x'; DROP TABLE tasks;--", "x'; DROP TABLE system_async_task;--", 'a$$b', "o'brien"];

/** JSON text nested `depth` deep, built as text: JSON.stringify itself overflows V8's stack at such depths. */
export function deepJson(depth = 10_000): string {
  let text = '"bottom"';
  for (let i = 0; i < depth; i += 1) text = i % 2 ? `[${text}]` : `{"d":${text}}`;
  return text;
}

/** How deep a value nests, and what is at the bottom (walked, not recursed: no stack to overflow). */
function depthOf(value: unknown): [number, unknown] {
  let depth = 0;
  let node = value;
  while (typeof node === 'object' && node !== null) {
    node = Array.isArray(node) ? node[0] : (node as { d: unknown }).d;
    depth += 1;
  }
  return [depth, node];
}

/** The payload a task holds is the value of `json` (depth-walked when it is the deep one: equality recurses). */
function expectSameJson(task: Task, json: string): void {
  const meant = JSON.parse(json) as unknown;
  if (depthOf(meant)[0] > 100) expect(depthOf(task.payload)).toEqual(depthOf(meant));
  else expect(task.payload).toEqual(meant);
}

async function refusal(attempt: Promise<unknown>): Promise<{ code?: string } | null> {
  return attempt.then(
    () => null,
    (error: unknown) => error as { code?: string },
  );
}

/** Counts every task of every status: "nothing written" is this staying the same. */
export async function taskCount(env: FaultEnvironment): Promise<number> {
  return Object.values(await env.store.countByStatus({ scope: G })).reduce((a, b) => a + b, 0);
}

export function inputFaultCases(env: () => FaultEnvironment): void {
  it('malformed payloads through the client and the HTTP API: refused with a typed error (never a 500), or stored as the same JSON and run', async () => {
    const worker = env().worker('bad-c', ['work', 'strict'], { concurrency: 4 }, { strictTypes: ['strict'] });
    const tasks = [defineTask({ type: 'work' }), defineTask({ type: 'strict', schema: FAULT_PAYLOAD_SCHEMA })];
    const client = createClient({ store: env().store, tasks });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const refusals = [
      await refusal(client.submit('work', { n: 10n })),
      await refusal(client.submit('work', circular)),
      await refusal(client.submit('strict', { ms: 'ten' })),
      await refusal(client.submit('strict', { mode: 'sleep', smuggled: true })),
    ];
    expect(refusals.map((error) => error?.code)).toEqual(['PAYLOAD_INVALID', 'PAYLOAD_INVALID', 'PAYLOAD_INVALID', 'PAYLOAD_INVALID']);
    expect(await taskCount(env())).toBe(0);

    const running = await startTestServer(env().store, { tasks, worker: false });
    try {
      const post = (rawBody: string) => running.call('POST', '/api/v1/tasks', { as: 'admin', rawBody });
      const refused: [string, Answer][] = [
        ['truncated', await post('{"type": "work", "payload": ')],
        ['not JSON', await post('type=work')],
        ['schema', await post('{"type": "strict", "payload": {"ms": "ten"}}')],
      ];
      for (const [what, answer] of refused) {
        expect([what, answer.status, INPUT_ERRORS.includes(answer.body?.code)]).toEqual([what, 400, true]);
      }
      expect(await taskCount(env())).toBe(0);
      // Valid JSON of hostile shape: the NUL and lone surrogate as JSON escapes, and nesting 10,000 deep.
      const bodies = ['{"s": "nul\\u0000inside", "k": {"\\u0000": 1}}', '{"s": "lone \\ud800 and \\udc00"}', deepJson()];
      const accepted: [string, string][] = [];
      for (const payload of bodies) {
        const answer = await post(`{"type": "work", "payload": ${payload}}`);
        expect(answer.status, answer.text.slice(0, 200)).not.toBe(500);
        if (answer.status === 202) accepted.push([answer.body.task.id, payload]);
        else expect([answer.status < 500, INPUT_ERRORS.includes(answer.body?.code)], answer.text.slice(0, 200)).toEqual([true, true]);
      }
      env().acknowledged.push(...accepted.map(([id]) => id));
      await worker.until('ready');
      for (const [id, payload] of accepted) {
        await worker.until('completed', SETTLE_MS, id);
        expectSameJson((await env().store.getTask({ id, scope: G }))!, payload);
      }
    } finally {
      await running.close();
    }
    expect(worker.exitCode()).toBeUndefined();
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await worker.stop();
  }, 90_000);

  it('malformed payloads at the store: NUL, lone surrogates, 10,000 deep run as the same JSON; one failing its schema at run time is dead-lettered after one attempt; the worker survives', async () => {
    const worker = env().worker('bad-s', ['work', 'strict'], { concurrency: 4 }, { strictTypes: ['strict'] });
    await worker.until('ready');
    const texts = [
      JSON.stringify({ s: 'nul\u0000inside', k: { '\u0000': 1 } }),
      JSON.stringify({ s: 'lone \ud800 and \udc00', pair: '\ud83d\ude00' }),
      deepJson(),
    ];
    const stored: [string, string][] = [];
    for (const text of texts) {
      const before = await taskCount(env());
      const ids = await env()
        .submitJson('work', [text])
        .catch((error: { code?: string }) => {
          expect(INPUT_ERRORS, String(error)).toContain(error.code);
          return [];
        });
      if (ids.length === 0) expect(await taskCount(env())).toBe(before);
      else stored.push([ids[0]!, text]);
    }
    const [wrongShape] = await env().submitJson('strict', [JSON.stringify({ ms: 'ten', smuggled: true })], { maxAttempts: 5 });
    for (const [id, text] of stored) {
      await worker.until('completed', SETTLE_MS, id);
      expectSameJson((await env().store.getTask({ id, scope: G }))!, text);
    }
    await waitFor(async () => (await env().statusOf(wrongShape!)) === 'FAILED', 'the wrong-shaped payload to fail', SETTLE_MS, 100);
    const failed = (await env().store.getTask({ id: wrongShape!, scope: G }))!;
    expect([failed.lastErrorCode, failed.attemptCount]).toEqual(['PAYLOAD_INVALID', 1]); // not retried: no retry can help
    expect(await env().executions('bad-s')).toBe(stored.length); // the handler never saw it
    // The worker survived them all and still runs tasks.
    const [plain] = await env().submit('work', [{ ms: 5 }]);
    await worker.until('completed', SETTLE_MS, plain);
    expect(worker.exitCode()).toBeUndefined();
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] }); // I5: the FAILED task has its dead letter
    await worker.stop();
  }, 90_000);

  it('payload text that is not JSON (truncated, raw NUL, raw lone surrogate) given to the store: refused as VALIDATION, nothing written, claims unharmed', async () => {
    const worker = env().worker('notjson-a', ['work'], { concurrency: 4 });
    await worker.until('ready');
    const texts = ['{"a": ', 'hello', '{"s": "raw \u0000 NUL"}', '{"s": "raw \ud800 surrogate"}'];
    // Each must be refused as VALIDATION, writing nothing — or, where the text still means one JSON value (a raw lone
    // surrogate is a code unit JSON.parse takes), kept as that value.
    const wrong: string[] = [];
    for (const text of texts) {
      const before = await taskCount(env());
      const result = await env()
        .submitJson('work', [text])
        .then(
          (ids) => ({ ids, error: null }),
          (error: Error & { code?: string }) => ({ ids: [] as string[], error }),
        );
      const what = JSON.stringify(text);
      if (result.error) {
        if (result.error.code !== 'VALIDATION')
          wrong.push(`${what}: refused as ${result.error.code ?? result.error.constructor.name}: ${result.error.message}`);
        if ((await taskCount(env())) !== before) wrong.push(`${what}: refused, yet written`);
        continue;
      }
      const meant = (() => {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return undefined;
        }
      })();
      const task = await env()
        .store.getTask({ id: result.ids[0]!, scope: G })
        .catch((error: Error) => error);
      const read = task instanceof Error ? `throws ${task.message}` : JSON.stringify(task!.payload);
      if (meant === undefined || task instanceof Error || JSON.stringify(task!.payload) !== JSON.stringify(meant))
        wrong.push(`${what}: stored, read back ${read}`);
    }
    // Whatever was written, the worker still claims and runs the type, and reads of every task still answer.
    const [plain] = await env().submit('work', [{ ms: 5 }]);
    await worker
      .until('completed', SETTLE_MS, plain)
      .catch(() => wrong.push(`a plain task of the type did not run: ${JSON.stringify(worker.events.slice(-3))}`));
    await allTasks(env().store).catch((error: Error) => wrong.push(`listing the tasks throws: ${error.message}`));
    expect(wrong).toEqual([]);
    await worker.stop();
  }, 60_000);

  it('hostile task types, owners and idempotency keys: stored verbatim and run by their exact type, or refused typed; the schema intact', async () => {
    const tables = await env().target.tables.tableNames();
    const worker = env().worker('hostile-a', [...HOSTILE_TYPES, 'work'], { concurrency: 4 });
    const client = createClient({ store: env().store, tasks: HOSTILE_TYPES.map((type) => defineTask({ type })) });
    const ids: string[] = [];
    for (const type of HOSTILE_TYPES) {
      const { task } = await client.submit(type, { text: type }, { owner: type, idempotencyKey: type });
      ids.push(task.id);
    }
    env().acknowledged.push(...ids);
    // 10,000 characters: refused by the definition; straight into the store, refused typed or kept verbatim.
    const long = 'x'.repeat(10_000);
    expect(() => defineTask({ type: long })).toThrow(expect.objectContaining({ code: 'VALIDATION' }));
    const kept = await env()
      .submitJson(long, ['{}'])
      .catch((error: { code?: string }) => {
        expect(error.code, String(error)).toBe('VALIDATION');
        return [];
      });
    for (const id of kept) expect((await env().store.getTask({ id, scope: G }))!.taskType).toBe(long);

    await worker.until('ready');
    for (const [index, type] of HOSTILE_TYPES.entries()) {
      await worker.until('completed', SETTLE_MS, ids[index]);
      const task = (await env().store.getTask({ id: ids[index]!, scope: G }))!;
      expect([task.status, task.taskType, task.owner, task.idempotencyKey, task.payload]).toEqual(['SUCCESS', type, type, type, { text: type }]);
      expect((await env().store.listTasks({ scope: Scope.owner(type), taskType: type, limit: 10 })).tasks.map((t) => t.id)).toEqual([ids[index]]);
      // The same key again answers the same task.
      expect(await client.submit(type, {}, { owner: type, idempotencyKey: type })).toMatchObject({ created: false, task: { id: ids[index] } });
    }
    expect(await env().target.tables.tableNames()).toEqual(tables);
    expect(await env().store.schemaVersion()).toBe(env().store.expectedSchemaVersion);
    const [plain] = await env().submit('work', [{ ms: 5 }]);
    await worker.until('completed', SETTLE_MS, plain);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await worker.stop();
  }, 90_000);
}

/**
 * Pending (FAULTS.md 19, issue 22): payload text that is not JSON, handed to
 * the store itself (a producer other than our client: the Store is public),
 * must be refused as the validation error it is, writing nothing, and the
 * queue must go on. Fails today on every store:
 * - PostgreSQL writes the row, then throws a bare SyntaxError (the caller
 *   believes nothing was written); every later claim of the type and every
 *   listing throws on that row's decode: the type's queue stops.
 * - SQLite and MySQL refuse it as STORE_UNAVAILABLE, which reads as
 *   transient (a caller retries it forever), not as VALIDATION.
 * - SQLite keeps a raw lone surrogate as U+FFFD (PostgreSQL keeps it as its
 *   escape, MySQL refuses it as VALIDATION).
 * Moves into input-cases.ts with the fix.
 */
import { expect, it } from 'vitest';
import { Scope } from '../../../src/core/scope.js';
import { describeOnStore } from '../describe-store.js';
import type { FaultEnvironment } from '../environment.js';
import { SETTLE_MS, taskCount } from '../input-cases.js';
import { allTasks } from '../invariants.js';

const G = Scope.global();

/** Payload text that is not JSON, handed to the store itself: a typed refusal naming the input, nothing written. */
function malformedJsonCases(env: () => FaultEnvironment): void {
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
}

for (const dialect of ['postgres', 'mysql', 'sqlite'] as const) await describeOnStore(dialect, 'payload text that is not JSON', malformedJsonCases);

/** The bounds of per-task logs (store/rules/logs.ts): what a batch keeps and drops, decided once for every store. */
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { boundLogBatch, logMarkerMessage, planLogAppend } from '../../src/store/rules/logs.js';
import { resolveWorkerOptions } from '../../src/worker/options.js';

const bounds = { maxLinesPerAttempt: 3, maxLinesPerTask: 5 };

describe('planLogAppend', () => {
  it('numbers a batch after the task’s highest seq (markers included), after the seqs of lines dropped unwritten', () => {
    expect(planLogAppend([], 1, 2, 0, bounds)).toEqual({ seqs: [1, 2], drops: [] });
    const plan = planLogAppend([{ attempt: 1, lines: 1, maxSeq: 7 }], 1, 2, 3, bounds);
    expect(plan.seqs).toEqual([11, 12]);
    expect(plan.drops).toEqual([{ attempt: 1, oldest: 0, phantom: 3, phantomThroughSeq: 10 }]);
  });

  it('drops the attempt’s oldest over its bound, then the oldest attempts’ over the task’s, never the current attempt’s for the task', () => {
    const stats = [
      { attempt: 1, lines: 2, maxSeq: 2 },
      { attempt: 2, lines: 2, maxSeq: 4 },
      { attempt: 3, lines: 2, maxSeq: 6 },
    ];
    // Attempt 3 gets 2 more: 4 > 3 drops 1 of its own; the task holds 2 + 2 + 3 = 7 > 5: attempt 1 loses 2.
    const plan = planLogAppend(stats, 3, 2, 0, bounds);
    expect(plan.seqs).toEqual([7, 8]);
    expect(plan.drops).toEqual([
      { attempt: 3, oldest: 1, phantom: 0, phantomThroughSeq: 0 },
      { attempt: 1, oldest: 2, phantom: 0, phantomThroughSeq: 0 },
    ]);
    // One more line a task of attempts 1–2 full: attempt 1 first, then attempt 2.
    const full = planLogAppend(
      [
        { attempt: 1, lines: 1, maxSeq: 3 },
        { attempt: 2, lines: 3, maxSeq: 6 },
        { attempt: 3, lines: 1, maxSeq: 7 },
      ],
      3,
      3,
      0,
      bounds,
    );
    expect(full.drops).toEqual([
      { attempt: 3, oldest: 1, phantom: 0, phantomThroughSeq: 0 },
      { attempt: 1, oldest: 1, phantom: 0, phantomThroughSeq: 0 },
      { attempt: 2, oldest: 1, phantom: 0, phantomThroughSeq: 0 },
    ]);
  });

  it('a batch longer than the attempt’s bound keeps its newest lines; the rest count as dropped unwritten', () => {
    expect(boundLogBatch(['a', 'b', 'c', 'd', 'e'], 2, 3)).toEqual({ lines: ['c', 'd', 'e'], bufferDropped: 4 });
    expect(boundLogBatch(['a'], 0, 3)).toEqual({ lines: ['a'], bufferDropped: 0 });
    expect(logMarkerMessage(2, 1)).toBe('1 earlier log line of attempt 2 dropped (log bounds: maxLogLinesPerAttempt, maxLogLinesPerTask)');
  });
});

describe('worker options of per-task logs', () => {
  const base = { store: { claimTasks: () => undefined } as never, tasks: [{ type: 't', execute: () => undefined }] as never, logger: false as const };

  it('defaults to 200 lines an attempt, 1,000 a task, 4 KiB messages, 8 KiB fields, no extra redacted names', () => {
    expect(resolveWorkerOptions(base)).toMatchObject({
      maxLogLinesPerAttempt: 200,
      maxLogLinesPerTask: 1000,
      maxLogMessageBytes: 4096,
      maxLogFieldsBytes: 8192,
      logRedactKeys: [],
    });
  });

  it('refuses bounds out of range, an attempt bound above the task bound, and redacted names that are not names', () => {
    for (const bad of [
      { maxLogLinesPerAttempt: 0 },
      { maxLogLinesPerAttempt: 20, maxLogLinesPerTask: 10 },
      { maxLogMessageBytes: 10 },
      { maxLogFieldsBytes: 2.5 },
      { logRedactKeys: 'password' },
      { logRedactKeys: [''] },
    ]) {
      expect(() => resolveWorkerOptions({ ...base, ...(bad as object) }), JSON.stringify(bad)).toThrow(InvalidOptionsError);
    }
  });
});

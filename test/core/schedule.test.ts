import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/core/errors.js';
import { compileCron, dueTicks, nextTicks } from '../../src/core/schedule.js';

const at = (iso: string) => new Date(iso);

describe('schedule ticks', () => {
  it('reads the expression in its time zone, across a daylight-saving change', () => {
    // 03:00 in New York: 08:00 UTC in winter (EST), 07:00 UTC from 8 March 2026 (EDT).
    const schedule = { cron: '0 3 * * *', timeZone: 'America/New_York', catchUp: 0, lastTickAt: at('2026-03-07T00:00:00Z'), enabled: true };
    expect(nextTicks(schedule, at('2026-03-07T00:00:00Z'), 2)).toEqual([at('2026-03-07T08:00:00Z'), at('2026-03-08T07:00:00Z')]);
  });

  it('after a day of downtime a per-second schedule yields the newest tick and catchUp more, without walking every second', () => {
    const schedule = { cron: '* * * * * *', timeZone: 'UTC', catchUp: 3, lastTickAt: at('2026-01-01T00:00:00Z') };
    const started = performance.now();
    const due = dueTicks(schedule, at('2026-01-02T00:00:00.500Z'))!;
    expect(performance.now() - started).toBeLessThan(1000);
    expect(due.run).toEqual([at('2026-01-01T23:59:57Z'), at('2026-01-01T23:59:58Z'), at('2026-01-01T23:59:59Z'), at('2026-01-02T00:00:00Z')]);
    expect(due.cursor).toEqual(at('2026-01-02T00:00:00Z'));
  });

  it('nothing is due before the first tick after the cursor; ticks at or before the cursor never come back', () => {
    const schedule = { cron: '*/5 * * * *', timeZone: 'UTC', catchUp: 10, lastTickAt: at('2026-01-01T00:05:00Z') };
    expect(dueTicks(schedule, at('2026-01-01T00:09:59Z'))).toBeNull();
    expect(dueTicks(schedule, at('2026-01-01T00:10:00Z'))!.run).toEqual([at('2026-01-01T00:10:00Z')]);
  });

  it('rejects a bad expression or zone with their own codes', () => {
    expect(() => compileCron('* * *', 'UTC')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_CRON }));
    expect(() => compileCron('0 3 * * *', 'Europe/Atlantis')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_TIME_ZONE }));
  });
});

/** TestClock: timers fire in due order as time is advanced, intervals repeat, a timer due now fires on the next turn. */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { TestClock } from '../../src/testing/clock.js';

it('fires timers in due order, each with the clock at its due time; intervals repeat; cleared ones never fire', () => {
  const clock = new TestClock(new Date('2026-01-01T00:00:00Z'));
  const fired: string[] = [];
  clock.setTimeout(() => fired.push(`b@${clock.now()}`), 300);
  clock.setTimeout(() => fired.push(`a@${clock.now()}`), 100);
  const cleared = clock.setTimeout(() => fired.push('cleared'), 200);
  const every = clock.setInterval(() => fired.push(`tick@${clock.now()}`), 150);
  clock.clearTimeout(cleared);
  clock.advance(350);
  expect(fired).toEqual(['a@100', 'tick@150', 'b@300', 'tick@300']);
  expect(clock.now()).toBe(350);
  expect(clock.date()).toEqual(new Date('2026-01-01T00:00:00.350Z'));
  clock.clearInterval(every);
  clock.advance(1000);
  expect(fired).toHaveLength(4);
  expect(clock.pendingTimers).toBe(0);
});

it('a timer armed by a firing timer fires in the same advance when it falls due within it', () => {
  const clock = new TestClock(0);
  const fired: number[] = [];
  clock.setTimeout(() => clock.setTimeout(() => fired.push(clock.now()), 50), 100);
  clock.advance(149);
  expect(fired).toEqual([]);
  clock.advance(1);
  expect(fired).toEqual([150]);
});

it('a timer due now fires on the next turn without an advance; setTime moves forward only', async () => {
  const clock = new TestClock(1_000);
  let fired = 0;
  clock.setTimeout(() => (fired += 1), 0);
  expect(fired).toBe(0);
  await nextTurn();
  expect(fired).toBe(1);
  clock.setTime(5_000);
  expect(clock.wallNow()).toBe(5_000);
  expect(clock.now()).toBe(4_000);
  expect(() => clock.setTime(4_999)).toThrow('time only moves forward');
  expect(() => clock.advance(-1)).toThrow('ms must be a finite number >= 0');
});

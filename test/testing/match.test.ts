/** The payload subset match behind enqueued({ payload }) and assertEnqueued. */
import { expect, it } from 'vitest';
import { matchesSubset } from '../../src/testing/match.js';

it('objects match by the keys the expectation names, recursively; arrays by length and element; the rest by value', () => {
  const payload = { to: 'a@x', vars: { name: 'Ada', tags: ['x', 'y'] }, count: 0, none: null };
  expect(matchesSubset(payload, {})).toBe(true);
  expect(matchesSubset(payload, { vars: { name: 'Ada' } })).toBe(true);
  expect(matchesSubset(payload, { vars: { tags: ['x', 'y'] } })).toBe(true);
  expect(matchesSubset(payload, { vars: { tags: ['x'] } })).toBe(false); // arrays: whole
  expect(matchesSubset(payload, { vars: { tags: [{}, 'y'] } })).toBe(false);
  expect(matchesSubset(payload, { count: 0, none: null })).toBe(true);
  expect(matchesSubset(payload, { none: undefined })).toBe(false); // null is not undefined
  expect(matchesSubset(payload, { missing: undefined })).toBe(false); // a key named must be there
  expect(matchesSubset(payload, { to: 'b@x' })).toBe(false);
  expect(matchesSubset(payload, { vars: 'Ada' })).toBe(false);
  expect(matchesSubset(['a'], {})).toBe(false); // an object expectation never matches an array
  expect(matchesSubset({ at: '2026-01-01T00:00:00.000Z' }, { at: new Date('2026-01-01T00:00:00Z') })).toBe(true); // JSON keeps dates as text
  expect(matchesSubset(7, 7)).toBe(true);
  expect(matchesSubset(Number.NaN, Number.NaN)).toBe(true);
});

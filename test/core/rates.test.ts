/** The rate rules written once (core/policy-keys.ts ratePolicyKeys, store/rules/rates.ts): lookup, window, room, picks. */
import { describe, expect, it } from 'vitest';
import { ratePolicyKeys } from '../../src/core/policy-keys.js';
import { pickWithinRates, RateBudget, ratePolicyOf, rateScopesOf, type RatePolicy } from '../../src/store/rules/rates.js';

const policies = new Map<string, RatePolicy>([
  ['TYPE:a', { limit: 3, periodMs: 1000 }],
  ['KEY:partner:*', { limit: 2, periodMs: 1000 }],
  ['KEY:partner:vip', { limit: 5, periodMs: 1000 }],
  ['OWNER:o', { limit: 1, periodMs: 10_000 }],
]);
const row = (id: string, extra: Record<string, unknown> = {}) => ({ id, task_type: 'a', owner: null, rate_key: null, ...extra });

describe('rate rules', () => {
  it('looks a key up as KEY:<key>, else KEY:<part before the first colon>:*', () => {
    expect(ratePolicyKeys('partner:42')).toEqual(['KEY:partner:42', 'KEY:partner:*']);
    expect(ratePolicyKeys('partner:42:x')).toEqual(['KEY:partner:42:x', 'KEY:partner:*']);
    expect(ratePolicyKeys('plain')).toEqual(['KEY:plain']);
    expect(ratePolicyKeys(':odd')).toEqual(['KEY::odd']);
    expect(ratePolicyOf('KEY:partner:1', policies)).toEqual({ limit: 2, periodMs: 1000 });
    expect(ratePolicyOf('KEY:partner:vip', policies)).toEqual({ limit: 5, periodMs: 1000 });
    expect(ratePolicyOf('KEY:other', policies)).toBeUndefined();
    expect(rateScopesOf(row('1', { owner: 'o', rate_key: 'partner:1' }), policies)).toEqual(['TYPE:a', 'OWNER:o', 'KEY:partner:1']);
    expect(rateScopesOf(row('2', { task_type: 'b', owner: 'p', rate_key: 'x' }), policies)).toEqual([]);
  });

  it('counts each scope in its own window (now − period, now], later starts included', () => {
    const now = 100_000;
    const budget = new RateBudget(
      policies,
      [
        { scopeKey: 'TYPE:a', startedAtMs: now - 1000 }, // out: the window is open at its start
        { scopeKey: 'TYPE:a', startedAtMs: now - 999 },
        { scopeKey: 'TYPE:a', startedAtMs: now + 5 }, // a claim that read an earlier clock: counted
        { scopeKey: 'OWNER:o', startedAtMs: now - 5000 }, // a 10 s period
        { scopeKey: 'KEY:partner:1', startedAtMs: now - 10 },
        { scopeKey: 'KEY:gone', startedAtMs: now - 10 }, // no policy: ignored
      ],
      now,
    );
    expect(budget.room('TYPE:a')).toBe(1);
    expect(budget.room('OWNER:o')).toBe(0);
    expect(budget.room('KEY:partner:1')).toBe(1);
    expect(budget.room('KEY:partner:2')).toBe(2);
    expect(budget.room('GLOBAL')).toBe(Infinity);
    expect(budget.nextSlotAtMs('OWNER:o')).toBe(now - 5000 + 10_000);
    expect(budget.exhausted()).toEqual({ owners: ['o'], rateKeys: [] });
  });

  it('picks in claim order within every room, skipping rows whose scope is spent', () => {
    const budget = new RateBudget(new Map([['KEY:partner:*', { limit: 1, periodMs: 1000 }]]), [], 0);
    const rows = [row('1', { rate_key: 'partner:a' }), row('2', { rate_key: 'partner:a' }), row('3', { rate_key: 'partner:b' }), row('4')];
    const picked = pickWithinRates(rows, new Map([['a', 10]]), 3, budget);
    expect(picked.map((r) => r.id)).toEqual(['1', '3', '4']);
    expect(budget.log).toEqual(['KEY:partner:a', 'KEY:partner:b']);
    expect(budget.prunes()).toEqual([
      { scopeKey: 'KEY:partner:a', beforeMs: -1000 },
      { scopeKey: 'KEY:partner:b', beforeMs: -1000 },
    ]);
  });
});

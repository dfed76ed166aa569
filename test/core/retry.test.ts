import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { DEFAULT_RETRY, resolveRetryOptions, retryDelayMs } from '../../src/core/retry.js';

describe('retry backoff', () => {
  const noJitter = { ...DEFAULT_RETRY, jitter: 0 };

  it('grows as base × multiplier^(attempt−1) with the seed defaults', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(noJitter, attempt))).toEqual([30_000, 60_000, 120_000, 240_000]);
  });

  it('caps at maxDelayMs, also for huge attempt numbers', () => {
    const options = { ...noJitter, maxDelayMs: 100_000 };
    expect(retryDelayMs(options, 3)).toBe(100_000);
    expect(retryDelayMs(options, 10_000)).toBe(100_000);
  });

  it('keeps the jitter within ±jitter of the capped value, and never above the cap', () => {
    const options = { ...DEFAULT_RETRY, jitter: 0.2 };
    expect(retryDelayMs(options, 1, () => 0)).toBe(24_000);
    expect(retryDelayMs(options, 1, () => 0.999999)).toBeCloseTo(36_000, -1);
    expect(retryDelayMs(options, 1, () => 0.5)).toBe(30_000);
    for (let i = 0; i < 1000; i++) {
      const delay = retryDelayMs(options, 2);
      expect(delay).toBeGreaterThanOrEqual(48_000);
      expect(delay).toBeLessThanOrEqual(72_000);
    }
    const capped = { ...options, maxDelayMs: 60_000 };
    expect(retryDelayMs(capped, 5, () => 0.999999)).toBe(60_000);
    expect(retryDelayMs(capped, 5, () => 0)).toBe(48_000);
  });

  it('rejects bad options naming the field', () => {
    expect(() => resolveRetryOptions('Worker', { jitter: 2 })).toThrow(/retry\.jitter/);
    expect(() => resolveRetryOptions('Worker', { multiplier: 0.5 })).toThrow(InvalidOptionsError);
    expect(() => resolveRetryOptions('Worker', { baseDelayMs: 10_000, maxDelayMs: 1000 })).toThrow(/maxDelayMs/);
  });
});

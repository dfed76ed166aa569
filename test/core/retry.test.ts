import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { DEFAULT_RETRY, mergeRetry, resolveRetryOptions, retryDelayMs } from '../../src/core/retry.js';

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

  it('keeps its jitter once the cap binds: delays spread under the cap instead of piling onto it', () => {
    const options = { baseDelayMs: 1000, multiplier: 2, maxDelayMs: 10_000, jitter: 0.2 };
    const delays = Array.from({ length: 2000 }, () => retryDelayMs(options, 20));
    const atCap = delays.filter((delay) => delay === 10_000).length;
    expect(atCap / delays.length).toBeLessThan(0.01);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(8000);
    expect(Math.max(...delays)).toBeLessThanOrEqual(10_000);
    // Spread over the whole range below the cap: each quarter gets a fair share.
    for (let quarter = 0; quarter < 4; quarter++) {
      const inQuarter = delays.filter((delay) => delay >= 8000 + quarter * 500 && delay < 8500 + quarter * 500).length;
      expect(inQuarter / delays.length).toBeGreaterThan(0.15);
    }
  });

  it('merges once: policy base delay over the definition over the worker', () => {
    const worker = { baseDelayMs: 10, multiplier: 2, maxDelayMs: 50, jitter: 0 };
    expect(mergeRetry(worker, { baseDelayMs: 60_000, maxDelayMs: 120_000 }, 5)).toEqual({ baseDelayMs: 5, multiplier: 2, maxDelayMs: 120_000, jitter: 0 });
    expect(mergeRetry(worker, { multiplier: 3 }, null)).toEqual({ baseDelayMs: 10, multiplier: 3, maxDelayMs: 50, jitter: 0 });
    // A policy base above the cap raises the cap with it.
    expect(mergeRetry(worker, undefined, 1000)).toMatchObject({ baseDelayMs: 1000, maxDelayMs: 1000 });
  });

  it('rejects bad options naming the field', () => {
    expect(() => resolveRetryOptions('Worker', { jitter: 2 })).toThrow(/retry\.jitter/);
    expect(() => resolveRetryOptions('Worker', { multiplier: 0.5 })).toThrow(InvalidOptionsError);
    expect(() => resolveRetryOptions('Worker', { baseDelayMs: 10_000, maxDelayMs: 1000 })).toThrow(/maxDelayMs/);
  });
});

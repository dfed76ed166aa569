import { InvalidOptionsError } from './errors.js';
import { checkKnownKeys, checkNumber } from './validate.js';

/** Exponential backoff with jitter; the seed's defaults. */
export interface RetryOptions {
  /** Delay before the first retry. Default 30 s. */
  baseDelayMs: number;
  /** Growth per attempt: base × multiplier^(attempt−1). Default 2.0. */
  multiplier: number;
  /** Upper bound of any delay, jitter included. Default 1 h. */
  maxDelayMs: number;
  /** Relative spread: the delay is drawn from ±jitter around the capped value. Default 0.2. */
  jitter: number;
}

export const DEFAULT_RETRY: RetryOptions = { baseDelayMs: 30_000, multiplier: 2, maxDelayMs: 3_600_000, jitter: 0.2 };

export function resolveRetryOptions(component: string, input: Partial<RetryOptions> | undefined): RetryOptions {
  if (typeof input === 'object' && input !== null) checkKnownKeys(component, input, Object.keys(DEFAULT_RETRY), 'retry.');
  const retry = { ...DEFAULT_RETRY, ...dropUndefined(input ?? {}) };
  checkNumber(component, 'retry.baseDelayMs', retry.baseDelayMs, { min: 0 });
  checkNumber(component, 'retry.multiplier', retry.multiplier, { min: 1 });
  checkNumber(component, 'retry.maxDelayMs', retry.maxDelayMs, { min: 0 });
  checkNumber(component, 'retry.jitter', retry.jitter, { min: 0, max: 1 });
  if (retry.maxDelayMs < retry.baseDelayMs) throw new InvalidOptionsError(component, 'retry.maxDelayMs', 'must be at least retry.baseDelayMs');
  return retry;
}

/**
 * The retry options that apply to one task type, merged in one place:
 * an operator's policy base delay over the definition's retry over the
 * worker's (README: "the policy wins"). The cap grows to the base if a
 * policy raised the base above it.
 */
export function mergeRetry(worker: RetryOptions, definition: Partial<RetryOptions> | undefined, policyBaseDelayMs: number | null | undefined): RetryOptions {
  const merged: RetryOptions = { ...worker, ...dropUndefined(definition ?? {}) };
  if (policyBaseDelayMs !== null && policyBaseDelayMs !== undefined) merged.baseDelayMs = policyBaseDelayMs;
  merged.maxDelayMs = Math.max(merged.maxDelayMs, merged.baseDelayMs);
  return merged;
}

/**
 * Delay before retrying after `attempt` (1-based) failed. `random` is in
 * [0, 1) and injectable so that tests can pin the jitter's extremes.
 *
 * The jitter is drawn over the part of [capped·(1−j), capped·(1+j)] that
 * lies under the cap, so the cap does not collect the upper half of all
 * draws: a burst that failed together does not retry together once the
 * backoff has reached maxDelayMs.
 */
export function retryDelayMs(options: RetryOptions, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  const uncapped = options.baseDelayMs * Math.pow(options.multiplier, exponent);
  const capped = Math.min(options.maxDelayMs, Number.isFinite(uncapped) ? uncapped : options.maxDelayMs);
  const low = capped * (1 - options.jitter);
  const high = Math.min(options.maxDelayMs, capped * (1 + options.jitter));
  return Math.round(Math.max(0, low + (high - low) * random()));
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

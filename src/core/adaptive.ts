/**
 * Adaptive limits (issue 27, part 3): per task type, opt-in, the type's
 * concurrency limit follows its failure rate — multiplicative decrease when
 * the failures of a window (all of them, or only chosen error codes such as
 * HTTP_429, HTTP_503, TIMEOUT) reach a threshold, additive increase while
 * they stay below it, always within [minLimit, maxLimit]. The rule itself is
 * store/rules/adaptive.ts; this module holds the operator's configuration
 * and its validation at the edge.
 */
import { ValidationError } from './errors.js';
import { checkKnownKeys } from './validate.js';

/** What an operator sets for a type (client.adaptive.set); omitted fields take the defaults below. */
export interface AdaptiveConfigInput {
  /** The lowest the limit goes. Default 1. */
  minLimit?: number;
  /** The highest the limit goes (and where it starts without a policy). Required. */
  maxLimit: number;
  /** The window of attempt outcomes each evaluation reads (never reaching back before the last change). Default 30000. */
  windowMs?: number;
  /** Fewer finished attempts in the window than this: no decision. Default 10. */
  minSamples?: number;
  /** Failure rate (0..1) at or above which the limit steps down. Default 0.2. */
  failureThreshold?: number;
  /** Only failures with these error codes count (e.g. ['HTTP_429', 'HTTP_503', 'TIMEOUT']); null: every failure. Default null. */
  codes?: readonly string[] | null;
  /** The multiplicative decrease: new = floor(current × factor), at least one less. Default 0.5. */
  decreaseFactor?: number;
  /** The additive increase on a window below the threshold. Default 1. */
  increaseStep?: number;
  /** The least time between two changes by the controller. Default 10000. */
  cooldownMs?: number;
}

export interface AdaptiveConfig {
  taskType: string;
  minLimit: number;
  maxLimit: number;
  windowMs: number;
  minSamples: number;
  failureThreshold: number;
  codes: string[] | null;
  decreaseFactor: number;
  increaseStep: number;
  cooldownMs: number;
}

/** A type's adaptive state as stored. */
export interface AdaptiveState extends AdaptiveConfig {
  /** false: `off` — the limit stays where it is, no evaluation. */
  enabled: boolean;
  /** An operator override holds: no evaluation until `overrideUntil` (null: until resumed). */
  overridden: boolean;
  overrideUntil: Date | null;
  /** The effective limit: the TYPE:<type> policy's maxConcurrency, which the claim reads. */
  currentLimit: number;
  /** The last change of the limit (cooldown and the window's start). */
  changedAt: Date;
  updatedAt: Date;
}

/** What moved the limit: bounded, for the metrics' `cause` label. */
export type LimitChangeKind = 'decrease' | 'increase' | 'override' | 'resume' | 'set' | 'off';

/** One row of the audit trail (system_async_task_limit_change). */
export interface LimitChange {
  id: string;
  taskType: string;
  /** null: there was no limit of the type's own before (the worker default). */
  fromLimit: number | null;
  /** null where the change does not move the limit (off). */
  toLimit: number | null;
  kind: LimitChangeKind;
  /** Human text: "failure rate 0.42 ≥ 0.2 over 30 s (HTTP_503 ×17)", "success: +1", "operator override". */
  cause: string;
  /** 'adaptive' for the controller, else the operator's actor id. */
  actor: string;
  actorName: string | null;
  changedAt: Date;
}

export const ADAPTIVE_ACTOR = 'adaptive';

const KEYS = ['minLimit', 'maxLimit', 'windowMs', 'minSamples', 'failureThreshold', 'codes', 'decreaseFactor', 'increaseStep', 'cooldownMs'] as const;
const MAX_LIMIT = 100_000;
const DAY_MS = 24 * 3600 * 1000;

/** The configuration with defaults, or a ValidationError naming the field. */
export function resolveAdaptiveConfig(taskType: string, input: AdaptiveConfigInput): AdaptiveConfig {
  if (typeof input !== 'object' || input === null) throw new ValidationError('an adaptive configuration must be an object', 'config');
  try {
    checkKnownKeys('adaptive', input, KEYS);
  } catch (error) {
    throw new ValidationError((error as Error).message, (error as ValidationError).field);
  }
  const config: AdaptiveConfig = {
    taskType,
    minLimit: int(input.minLimit ?? 1, 'minLimit', 1, MAX_LIMIT),
    maxLimit: int(input.maxLimit, 'maxLimit', 1, MAX_LIMIT),
    windowMs: int(input.windowMs ?? 30_000, 'windowMs', 10, DAY_MS),
    minSamples: int(input.minSamples ?? 10, 'minSamples', 1, 1_000_000),
    failureThreshold: fraction(input.failureThreshold ?? 0.2, 'failureThreshold', false),
    codes: codes(input.codes ?? null),
    decreaseFactor: fraction(input.decreaseFactor ?? 0.5, 'decreaseFactor', true),
    increaseStep: int(input.increaseStep ?? 1, 'increaseStep', 1, MAX_LIMIT),
    cooldownMs: int(input.cooldownMs ?? 10_000, 'cooldownMs', 0, DAY_MS),
  };
  if (config.minLimit > config.maxLimit) throw new ValidationError(`minLimit (${config.minLimit}) must not exceed maxLimit (${config.maxLimit})`, 'minLimit');
  return config;
}

function int(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new ValidationError(`${field} must be an integer from ${min} to ${max}, got ${String(value)}`, field);
  return value;
}

/** (0, 1) for a factor (a decrease must decrease), [0, 1] → (0, 1] for a threshold (0 would always decrease). */
function fraction(value: unknown, field: string, open: boolean): number {
  const ok = typeof value === 'number' && Number.isFinite(value) && value > 0 && (open ? value < 1 : value <= 1);
  if (!ok) throw new ValidationError(`${field} must be a number in ${open ? '(0, 1)' : '(0, 1]'}, got ${String(value)}`, field);
  return value;
}

function codes(value: unknown): string[] | null {
  if (value === null) return null;
  const valid =
    Array.isArray(value) && value.length > 0 && value.length <= 50 && value.every((c) => typeof c === 'string' && /^[A-Za-z0-9_.:-]{1,100}$/.test(c));
  if (!valid) throw new ValidationError('codes must be null or 1 to 50 error codes (letters, digits, _ . : -)', 'codes');
  return [...new Set(value as string[])];
}

/**
 * A task's durable steps (ctx.step) as operators read them: the stored rows
 * with their results parsed, and the summary diagnose prints.
 */
import type { StepRecord } from '../store/types.js';

export interface TaskStep {
  name: string;
  /** true: the task's current attempt cycle (what a retry resumes from); false: a cycle an operator's retry or a replay ended. */
  current: boolean;
  /** 0 for the current cycle; else the attempt count the cycle ended at. */
  cycle: number;
  /** Its place in its cycle: 1, 2, … */
  seq: number;
  /** The attempt that ran it. */
  attempt: number;
  workerId: string;
  recordedAt: Date;
  /** The step's result (undefined: fn returned nothing). */
  result: unknown;
}

export function taskStepOf(step: StepRecord): TaskStep {
  return {
    name: step.name,
    current: step.cycle === 0,
    cycle: step.cycle,
    seq: step.seq,
    attempt: step.attempt,
    workerId: step.workerId,
    recordedAt: step.recordedAt,
    result: step.resultJson === null ? undefined : JSON.parse(step.resultJson),
  };
}

/** What diagnose says of a task's steps in its current cycle. */
export interface StepSummary {
  completed: number;
  last: { name: string; attempt: number; recordedAt: Date } | null;
  /** e.g. "3 steps completed, last: charge-card at 2026-12-02T10:00:00.000Z (attempt 2)"; null: the handler recorded none. */
  message: string | null;
}

export function stepSummary(steps: readonly StepRecord[]): StepSummary {
  const current = steps.filter((step) => step.cycle === 0);
  const last = current[current.length - 1];
  if (!last) return { completed: 0, last: null, message: null };
  const n = current.length;
  return {
    completed: n,
    last: { name: last.name, attempt: last.attempt, recordedAt: last.recordedAt },
    message: `${n} step${n === 1 ? '' : 's'} completed, last: ${last.name} at ${last.recordedAt.toISOString()} (attempt ${last.attempt}); a retry resumes after it`,
  };
}

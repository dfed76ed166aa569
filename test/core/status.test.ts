import { describe, expect, it } from 'vitest';
import { ALL_STATUSES, assertTransition, canTransition, isTerminal, TERMINAL_STATUSES, TRANSITIONS, type TaskStatus } from '../../src/core/status.js';

describe('the transition table', () => {
  it('lists every status, and only known statuses as targets', () => {
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...ALL_STATUSES].sort());
    for (const targets of Object.values(TRANSITIONS)) for (const to of targets) expect(ALL_STATUSES).toContain(to);
  });

  it('allows exactly the lifecycle edges', () => {
    const edges = Object.entries(TRANSITIONS)
      .flatMap(([from, targets]) => targets.map((to) => `${from}->${to}`))
      .sort();
    expect(edges).toEqual(
      [
        'BLOCKED->CANCELLED',
        'BLOCKED->PAUSED',
        'BLOCKED->QUEUED',
        'CANCELLED->BLOCKED',
        'PAUSED->BLOCKED',
        'RUNNING->BLOCKED',
        'CANCEL_REQUESTED->CANCELLED',
        'CANCEL_REQUESTED->PARTIAL_SUCCESS',
        'CANCEL_REQUESTED->SUCCESS',
        'FAILED->QUEUED',
        'PAUSED->CANCELLED',
        'PAUSED->FAILED',
        'PAUSED->QUEUED',
        'QUEUED->CANCELLED',
        'QUEUED->FAILED',
        'QUEUED->PAUSED',
        'QUEUED->RUNNING',
        'RETRY_WAIT->CANCELLED',
        'RETRY_WAIT->FAILED',
        'RETRY_WAIT->PAUSED',
        'RETRY_WAIT->QUEUED',
        'RETRY_WAIT->RUNNING',
        'RUNNING->CANCELLED',
        'RUNNING->CANCEL_REQUESTED',
        'RUNNING->FAILED',
        'RUNNING->PARTIAL_SUCCESS',
        'RUNNING->QUEUED',
        'RUNNING->RETRY_WAIT',
        'RUNNING->SUCCESS',
      ].sort(),
    );
  });

  it('never leaves SUCCESS or PARTIAL_SUCCESS; FAILED only by an operator retry; CANCELLED only when a flow’s retry revives it', () => {
    for (const status of ['SUCCESS', 'PARTIAL_SUCCESS'] as TaskStatus[]) {
      for (const to of ALL_STATUSES) expect(canTransition(status, to)).toBe(false);
    }
    expect(TRANSITIONS.FAILED).toEqual(['QUEUED']);
    // A node its failed parent cancelled (PARENT_FAILED) waits for that parent again when it is retried (rules/flows.ts).
    expect(TRANSITIONS.CANCELLED).toEqual(['BLOCKED']);
    expect(TERMINAL_STATUSES.every(isTerminal)).toBe(true);
    expect(isTerminal('RUNNING')).toBe(false);
  });

  it('reaches RUNNING only by a claim, from QUEUED or a due RETRY_WAIT', () => {
    expect(ALL_STATUSES.filter((from) => canTransition(from, 'RUNNING'))).toEqual(['QUEUED', 'RETRY_WAIT']);
    expect(() => assertTransition('PAUSED', 'RUNNING')).toThrow(/PAUSED → RUNNING/);
    expect(() => assertTransition('QUEUED', 'RUNNING')).not.toThrow();
  });
});

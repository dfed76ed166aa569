/**
 * Fixtures the store suites share: a new task, claim parameters, the lease
 * of a claimed task, a failure; and `useStore`, a fresh store per test whose
 * status changes are all checked against the transition table.
 */
import { afterEach, beforeEach, expect } from 'vitest';
import { uuidv7 } from '../../src/core/ids.js';
import type { FailureRecord, Lease, NewTask, Task } from '../../src/core/task.js';
import type { ClaimParams, Store } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { observeTransitions, type Transition } from './transitions.js';

export function newTask(overrides: Partial<NewTask> = {}): NewTask {
  return {
    id: uuidv7(),
    taskType: 'alpha',
    payloadJson: '{"n":1}',
    priority: 0,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts: 3,
    owner: null,
    idempotencyKey: null,
    traceId: null,
    ...overrides,
  };
}

export function claimParams(overrides: Partial<ClaimParams> = {}): ClaimParams {
  return { workerId: 'w1', taskTypes: ['alpha'], limit: 10, leaseMs: 30_000, globalConcurrency: 1000, typeConcurrency: 1000, ...overrides };
}

export function leaseOf(task: Task): Lease {
  return { taskId: task.id, workerId: task.leaseOwner!, attempt: task.attemptCount, token: task.leaseToken! };
}

export const FAILURE: FailureRecord = { errorCode: 'BOOM', message: 'it broke', traceId: 'trace-1', retryable: true };

/**
 * A fresh store for every test, wrapped so that every status change it makes
 * is recorded; after each test, each one must be in TRANSITIONS.
 */
export function useStore(factory: StoreFactory): { readonly store: Store; readonly transitions: readonly Transition[] } {
  let store: Store | undefined;
  let raw: Store | undefined;
  const transitions: Transition[] = [];
  beforeEach(async () => {
    transitions.length = 0;
    raw = await factory.create();
    store = observeTransitions(raw, transitions);
  });
  afterEach(async () => {
    if (raw) await factory.destroy(raw);
    const illegal = transitions.filter((t) => !t.allowed).map((t) => `${t.from} → ${t.to} (${t.method})`);
    expect(illegal, 'status changes outside TRANSITIONS').toEqual([]);
  });
  return {
    get store() {
      return store!;
    },
    transitions,
  };
}

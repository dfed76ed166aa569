/**
 * Records every status change a store makes: around each call that may
 * change a status, all tasks' statuses are read before and after (the suites
 * hold a handful of tasks), and each difference is one observed transition,
 * judged against TRANSITIONS (core/status.ts). One call moves a task one
 * step at most, so a before/after difference is a real transition.
 */
import { Scope } from '../../src/core/scope.js';
import { canTransition, type TaskStatus } from '../../src/core/status.js';
import type { Store } from '../../src/store/types.js';

export interface Transition {
  method: string;
  from: TaskStatus;
  to: TaskStatus;
  allowed: boolean;
}

const WRITES = new Set<string>([
  'claimTasks',
  'renewLeases',
  'saveProgress',
  'finishAttempts',
  'finishAndClaim',
  'releaseTasks',
  'recover',
  'changeStatus',
  'replayDeadLetters',
  'purgeTerminalTasks',
]);

async function statuses(store: Store): Promise<Map<string, TaskStatus> | null> {
  try {
    const page = await store.listTasks({ scope: Scope.global(), limit: 1000 });
    return new Map(page.tasks.map((task) => [task.id, task.status]));
  } catch {
    return null; // closed, or not migrated: that call changes nothing either
  }
}

export function observeTransitions(store: Store, into: Transition[]): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (typeof property !== 'string' || !WRITES.has(property)) return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        const before = await statuses(target);
        const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        const after = before && (await statuses(target));
        for (const [id, to] of after ?? []) {
          const from = before!.get(id);
          if (from !== undefined && from !== to) into.push({ method: property, from, to, allowed: canTransition(from, to) });
        }
        return answer;
      };
    },
  });
}

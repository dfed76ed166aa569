/**
 * What a caller sees of a task and of its operator actions. A `user` (a tenant) does not see which worker
 * holds a lease (`leaseOwner`: host and pid of a machine in the cluster) nor the
 * lease's fencing token (`leaseToken`): both are the cluster's internals, and
 * the token is half of what a write about a leased task is fenced by.
 */
import type { Task } from '../core/task.js';
import type { TaskActionRecord } from '../store/types.js';
import type { TaskStep } from '../client/steps.js';
import type { Principal } from './auth.js';

export type UserTaskView = Omit<Task, 'leaseOwner' | 'leaseToken'>;

export function taskView(principal: Principal | null, task: Task): Task | UserTaskView {
  if (principal?.role !== 'user') return task;
  const view: Partial<Task> = { ...task };
  delete view.leaseOwner;
  delete view.leaseToken;
  return view as UserTaskView;
}

export type TaskStepView = Omit<TaskStep, 'workerId'>;

/** What a caller sees of a durable step: a `user` not the worker that ran it (the cluster's internals, as the lease owner). */
export function stepView(principal: Principal | null, step: TaskStep): TaskStep | TaskStepView {
  if (principal?.role !== 'user') return step;
  const view: Partial<TaskStep> = { ...step };
  delete view.workerId;
  return view as TaskStepView;
}

export type TaskActionView = Omit<TaskActionRecord, 'actor' | 'actorName'> & { actor: string | null; actorName: string | null };

/**
 * What a caller sees of an operator action on a task. A `user` sees what was
 * done and when, but who only when it was its own credential: an operator's
 * token name or JWT subject is the operating side's, like the lease owner.
 */
export function actionView(principal: Principal | null, action: TaskActionRecord): TaskActionRecord | TaskActionView {
  if (principal?.role !== 'user' || action.actor === principal.identity) return action;
  return { ...action, actor: null, actorName: null };
}

/**
 * What a caller sees of a task. A `user` (a tenant) does not see which worker
 * holds a lease (`leaseOwner`: host and pid of a machine in the cluster) nor the
 * lease's fencing token (`leaseToken`): both are the cluster's internals, and
 * the token is half of what a write about a leased task is fenced by.
 */
import type { Task } from '../core/task.js';
import type { Principal } from './auth.js';

export type UserTaskView = Omit<Task, 'leaseOwner' | 'leaseToken'>;

export function taskView(principal: Principal | null, task: Task): Task | UserTaskView {
  if (principal?.role !== 'user') return task;
  const view: Partial<Task> = { ...task };
  delete view.leaseOwner;
  delete view.leaseToken;
  return view as UserTaskView;
}

/**
 * Middleware: code a client runs around its submits and a worker around its
 * executions, for what cuts across every task type (an owner from the
 * request's tenant, timing, auditing, encryption at rest).
 *
 * One object may bring four hooks, each optional:
 * - `submit(call, next)` around a client's submit, submitMany and submitFlow:
 *   it sees the requests after the types' schemas accepted them and may change
 *   them (payload, owner, priority…: what `next` gets is checked again as a
 *   request), and sees the results `next` answers. Throwing refuses the whole
 *   call: nothing is written.
 * - `execute(call, next)` around a worker's execution: it sees the payload
 *   after `decode` and before the type's schema, and may change it, run
 *   code before and after, change the result, or answer without calling
 *   `next` (the handler does not run). A throw fails the attempt as a
 *   handler's throw does (a TaskFailure chooses its code and retryability).
 * - `encode({ kind, taskType, value })`, synchronous, on every value on its
 *   way into the database: each task's payload (submits, flows, publishes, a
 *   handler's fan-out children) and each success's result.
 * - `decode(...)`, its reverse: the worker's payload before `execute` and the
 *   results ctx.parents() / ctx.children() read; `client.reveal(task)`.
 *
 * Order: the first `use()` is the outermost. A submit's requests pass the
 * middleware first to last and their results last to first; an execution
 * likewise. `encode` runs last to first (the first middleware's encoding is
 * the outer layer of what is stored) and `decode` first to last.
 */
import { TaskLeaseError } from '../core/errors.js';
import type { TaskContext } from '../core/context.js';
import type { AnyTaskDefinition, TaskAwaitChildren, TaskResult, TaskSnooze } from '../core/definition.js';
import type { Task } from '../core/task.js';
import type { InsertTaskResult } from '../store/types.js';
import type { SubmitRequest } from './submit.js';

/** Which client call a submit middleware wraps. */
export type SubmitVia = 'submit' | 'flow';

export interface SubmitCall {
  /** The requests in order: one per task (a flow: one per node). `next` must get as many, in the same order. */
  readonly requests: readonly SubmitRequest[];
  readonly via: SubmitVia;
}

export type SubmitNext = (requests: readonly SubmitRequest[]) => Promise<InsertTaskResult[]>;

/** What a handler may return: a result, a snooze, a fan-out (or nothing: SUCCESS). */
export type HandlerReturn = TaskResult | TaskSnooze | TaskAwaitChildren | void;

export interface ExecuteCall {
  readonly context: TaskContext;
  readonly definition: AnyTaskDefinition;
  /** The payload as stored and decoded (or as an outer middleware passed it on). */
  readonly payload: unknown;
}

export type ExecuteNext = (payload: unknown) => Promise<HandlerReturn>;

/** A value on its way into or out of the database. */
export interface StoredValue {
  readonly kind: 'payload' | 'result';
  readonly taskType: string;
  readonly value: unknown;
}

export interface Middleware {
  /** Names it in errors (1–100 characters). */
  readonly name: string;
  submit?(call: SubmitCall, next: SubmitNext): Promise<InsertTaskResult[]>;
  execute?(call: ExecuteCall, next: ExecuteNext): Promise<HandlerReturn>;
  encode?(stored: StoredValue): unknown;
  decode?(stored: StoredValue): unknown;
}

/** A middleware broke its contract: called next twice, or changed how many requests a submit holds. */
export class MiddlewareError extends TaskLeaseError {
  constructor(
    readonly middleware: string,
    code: 'MIDDLEWARE_INVALID' | 'MIDDLEWARE_NEXT_TWICE' | 'MIDDLEWARE_CHANGED_REQUESTS',
    message: string,
  ) {
    super(code, `middleware ${middleware}: ${message}`);
  }
}

const HOOKS = ['submit', 'execute', 'encode', 'decode'] as const;

/** The middleware of one client or worker, in use() order; one owner of the order rules above. */
export class MiddlewareStack {
  private readonly list: Middleware[] = [];

  constructor(initial: readonly Middleware[] = []) {
    for (const middleware of initial) this.add(middleware);
  }

  add(middleware: Middleware): void {
    if (typeof middleware !== 'object' || middleware === null) throw new MiddlewareError('?', 'MIDDLEWARE_INVALID', 'must be an object');
    const { name } = middleware;
    if (typeof name !== 'string' || name.length === 0 || name.length > 100)
      throw new MiddlewareError('?', 'MIDDLEWARE_INVALID', 'needs a name of 1–100 characters');
    const hooks = HOOKS.filter((hook) => middleware[hook] !== undefined);
    if (hooks.length === 0) throw new MiddlewareError(name, 'MIDDLEWARE_INVALID', `has none of ${HOOKS.join(', ')}`);
    for (const hook of hooks) if (typeof middleware[hook] !== 'function') throw new MiddlewareError(name, 'MIDDLEWARE_INVALID', `${hook} must be a function`);
    this.list.push(middleware);
  }

  get hasSubmit(): boolean {
    return this.list.some((m) => m.submit);
  }

  get hasExecute(): boolean {
    return this.list.some((m) => m.execute);
  }

  get hasCodec(): boolean {
    return this.list.some((m) => m.encode || m.decode);
  }

  /** The requests through every submit hook to `write`; the results back out. */
  runSubmit(call: SubmitCall, write: SubmitNext): Promise<InsertTaskResult[]> {
    const chain = this.list.filter((m) => m.submit);
    const dispatch = async (index: number, requests: readonly SubmitRequest[], by: string | null): Promise<InsertTaskResult[]> => {
      if (by !== null && (!Array.isArray(requests) || requests.length !== call.requests.length)) {
        throw new MiddlewareError(
          by,
          'MIDDLEWARE_CHANGED_REQUESTS',
          `passed ${Array.isArray(requests) ? requests.length : 'no'} requests on, not ${call.requests.length}`,
        );
      }
      const middleware = chain[index];
      if (!middleware) return write(requests);
      return middleware.submit!(
        { requests, via: call.via },
        once(middleware.name, (next) => dispatch(index + 1, next, middleware.name)),
      );
    };
    return dispatch(0, call.requests, null);
  }

  /** The payload through every execute hook to `run` (the schema, validate and the handler); the result back out. */
  runExecute(call: ExecuteCall, run: ExecuteNext): Promise<HandlerReturn> {
    const chain = this.list.filter((m) => m.execute);
    const dispatch = (index: number, payload: unknown): Promise<HandlerReturn> => {
      const middleware = chain[index];
      if (!middleware) return run(payload);
      return middleware.execute!(
        { ...call, payload },
        once(middleware.name, (next) => dispatch(index + 1, next)),
      );
    };
    return dispatch(0, call.payload);
  }

  /** The value as stored: every encode hook, last used first. */
  encode(kind: StoredValue['kind'], taskType: string, value: unknown): unknown {
    let current = value;
    for (let i = this.list.length - 1; i >= 0; i -= 1) {
      const encode = this.list[i]!.encode;
      if (encode) current = encode({ kind, taskType, value: current });
    }
    return current;
  }

  /** The value as given: every decode hook, first used first. */
  decode(kind: StoredValue['kind'], taskType: string, value: unknown): unknown {
    let current = value;
    for (const middleware of this.list) if (middleware.decode) current = middleware.decode({ kind, taskType, value: current });
    return current;
  }

  /** A task with its payload and result decoded (the same task when no middleware decodes). */
  reveal(task: Task): Task {
    if (!this.list.some((m) => m.decode)) return task;
    return {
      ...task,
      payload: this.decode('payload', task.taskType, task.payload),
      result: task.result == null ? task.result : this.decode('result', task.taskType, task.result),
    };
  }
}

/** `next` for one middleware: a second call is its bug, refused rather than run twice. */
function once<A, R>(name: string, next: (arg: A) => Promise<R>): (arg: A) => Promise<R> {
  let called = false;
  return (arg: A) => {
    if (called) return Promise.reject(new MiddlewareError(name, 'MIDDLEWARE_NEXT_TWICE', 'called next twice'));
    called = true;
    return next(arg);
  };
}

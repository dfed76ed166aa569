/**
 * The warm threads of a worker's sandboxed task types (core/sandbox.ts): a
 * thread that finished its task cleanly waits for the next task of its type
 * (its module loaded, its JIT warm) up to idleTimeoutMs; a thread that was
 * terminated, crashed or ran out of memory is gone, and the next task starts
 * a new one. At most one task runs in a thread at a time, so a type never has
 * more threads than the worker has slots. close() (the worker's stop) ends
 * them all, a handler that outlived the shutdown included.
 */
import type { AnyTaskDefinition } from '../../core/definition.js';
import { moduleUrl, SANDBOX_DEFAULTS } from '../../core/sandbox.js';
import { TaskAbortedError } from '../../core/errors.js';
import type { ExecutionContext } from '../context.js';
import type { Execution } from '../execution.js';
import { SandboxThread } from './handle.js';

export class SandboxPool {
  /** Idle threads by task type, the most recently used last. */
  private readonly idle = new Map<string, SandboxThread[]>();
  private readonly idleTimers = new Map<SandboxThread, NodeJS.Timeout>();
  private readonly all = new Set<SandboxThread>();
  private closed = false;

  constructor(private readonly options: { lostLeaseGraceMs: number }) {}

  /** Runs the execution's handler in a thread of its type; settles once the handler answered or its thread is gone. */
  async run(execution: Execution, context: ExecutionContext<Execution>, payload: unknown): Promise<unknown> {
    const thread = this.take(execution.definition);
    // A module that never finishes loading must not hold the slot past an abort either.
    const off = execution.onAbort(() => thread.terminate(execution.abortReason!));
    try {
      await thread.ready;
    } catch (error) {
      thread.terminate('idle');
      throw execution.abortReason ?? error;
    } finally {
      off();
    }
    // Aborted before this run began (the listener above ends only a thread still loading): the handler never runs,
    // and the thread stays warm for the next task.
    if (execution.abortReason) {
      this.release(execution.definition, thread);
      throw execution.abortReason;
    }
    try {
      const result = await thread.run(execution, context, payload);
      this.release(execution.definition, thread);
      return result;
    } catch (error) {
      if (thread.alive) this.release(execution.definition, thread); // the handler threw: its thread is sound
      throw error;
    }
  }

  /** Terminates every thread and resolves once they are gone; a run still in progress rejects with SHUTDOWN. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.idleTimers.clear();
    this.idle.clear();
    const threads = [...this.all];
    for (const thread of threads) thread.terminate(new TaskAbortedError('SHUTDOWN', 'worker stopped'));
    await Promise.all(threads.map((thread) => thread.exited));
  }

  private take(definition: AnyTaskDefinition): SandboxThread {
    const idle = this.idle.get(definition.type) ?? [];
    // (A thread whose idle time ran out may still be on the list until it has exited: never handed out.)
    for (let thread = idle.pop(); thread; thread = idle.pop()) {
      clearTimeout(this.idleTimers.get(thread));
      this.idleTimers.delete(thread);
      if (thread.alive) return thread;
    }
    const sandbox = definition.sandbox!;
    const started = new SandboxThread(
      moduleUrl(definition.type, sandbox.module),
      sandbox.exportName ?? SANDBOX_DEFAULTS.exportName,
      { ...sandbox, terminateGraceMs: sandbox.terminateGraceMs ?? SANDBOX_DEFAULTS.terminateGraceMs, lostLeaseGraceMs: this.options.lostLeaseGraceMs },
      (gone) => this.forget(definition.type, gone),
    );
    this.all.add(started);
    if (this.closed) started.terminate('idle');
    return started;
  }

  private release(definition: AnyTaskDefinition, thread: SandboxThread): void {
    if (this.closed || !thread.alive) {
      thread.terminate('idle');
      return;
    }
    const list = this.idle.get(definition.type) ?? [];
    list.push(thread);
    this.idle.set(definition.type, list);
    thread.unref();
    const idleMs = definition.sandbox!.idleTimeoutMs ?? SANDBOX_DEFAULTS.idleTimeoutMs;
    const timer = setTimeout(() => thread.terminate('idle'), idleMs);
    timer.unref();
    this.idleTimers.set(thread, timer);
  }

  private forget(type: string, thread: SandboxThread): void {
    this.all.delete(thread);
    clearTimeout(this.idleTimers.get(thread));
    this.idleTimers.delete(thread);
    const list = this.idle.get(type);
    const index = list?.indexOf(thread) ?? -1;
    if (index >= 0) list!.splice(index, 1);
  }
}

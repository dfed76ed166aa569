/**
 * Parent side of the worker processes: fork (through tsx), wait for `ready`,
 * `go`, follow progress, `stop` and collect the final stats. A child that
 * does not exit after stop is killed by its own pid.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { ChildMessage, ParentMessage, WorkerSpec, WorkerStats } from './types.js';

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export class WorkerProcess {
  /** Handlers run so far, as last reported (for the drain's end, never for a figure). */
  count = 0;
  onStarted: ((enqueuedAt: number, startedAt: number) => void) | null = null;
  onProgress: (() => void) | null = null;
  private finalStats: Promise<WorkerStats>;
  private resolveFinal!: (stats: WorkerStats) => void;
  private failure: Error | null = null;
  private failureListeners: Array<(error: Error) => void> = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly label: string,
  ) {
    this.finalStats = new Promise((resolve, reject) => {
      this.resolveFinal = resolve;
      this.failureListeners.push(reject);
    });
    this.finalStats.catch(() => undefined);
    child.on('message', (message: ChildMessage) => this.handle(message));
    child.on('exit', (code, signal) => {
      if (code !== 0) this.fail(new Error(`${label} exited with ${code ?? signal}`));
    });
  }

  /** Forks `script` with the spec and resolves once the worker is prepared. */
  static async spawn(script: string, spec: WorkerSpec, label: string): Promise<WorkerProcess> {
    const child = fork(script, [JSON.stringify(spec)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const worker = new WorkerProcess(child, label);
    await worker.waitFor('ready', READY_TIMEOUT_MS);
    return worker;
  }

  go(): void {
    this.post({ type: 'go' });
  }

  /** Resolves when `failure` happens; lets a caller race a wait against a crash. */
  failed(): Promise<never> {
    return new Promise((_, reject) => {
      if (this.failure) reject(this.failure);
      else this.failureListeners.push(reject);
    });
  }

  async stop(): Promise<WorkerStats> {
    if (this.failure) throw this.failure;
    this.post({ type: 'stop' });
    const timer = setTimeout(() => {
      this.fail(new Error(`${this.label} did not stop within ${STOP_TIMEOUT_MS} ms; killed`));
      this.kill();
    }, STOP_TIMEOUT_MS);
    try {
      return await this.finalStats;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills this child (by its own pid) if it is still running. */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private post(message: ParentMessage): void {
    if (this.child.connected) this.child.send(message);
  }

  private readyListeners: Array<() => void> = [];

  private waitFor(_what: 'ready', timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`${this.label} not ready within ${timeoutMs} ms`));
      }, timeoutMs);
      this.readyListeners.push(() => {
        clearTimeout(timer);
        resolve();
      });
      this.failureListeners.push((error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  }

  private handle(message: ChildMessage): void {
    switch (message.type) {
      case 'ready':
        for (const listener of this.readyListeners.splice(0)) listener();
        break;
      case 'progress':
        this.count = message.count;
        this.onProgress?.();
        break;
      case 'started':
        this.count += 1;
        this.onStarted?.(message.enqueuedAt, message.startedAt);
        break;
      case 'final':
        this.count = message.stats.count;
        this.resolveFinal(message.stats);
        break;
      case 'error':
        this.fail(new Error(`${this.label}: ${message.message}`));
        break;
    }
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const listener of this.failureListeners.splice(0)) listener(error);
  }
}

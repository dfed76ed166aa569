/**
 * Parent side of the fault tests: spawns worker-child.ts as a real OS
 * process (node --import tsx), parses its JSON lines, and waits on them.
 * Every child is tracked so that a failing test still kills what it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from '../helpers/wait.js';
import type { FinishedSpan } from '../helpers/memory-tracer.js';
import type { ChildConfig } from './worker-child.js';

export interface ChildEvent {
  event: string;
  id?: string;
  reason?: string;
  operation?: string;
  message?: string;
  completed?: string[];
  pid?: number;
  /** Wall-clock milliseconds (Date.now()) in the child when it said this. */
  at?: number;
  attempt?: number;
  /** The durable step it is about (fault-child.ts, mode steps): `name` of stepRun / stepRecorded / stepRefused, `step` of aborted. */
  name?: string;
  step?: string;
  /** A `span` line: an OpenTelemetry span the child's in-memory SDK saw end. */
  span?: FinishedSpan;
  /** A `heartbeat` line: leases renewed, the renewal's wait for a connection and its round trip from then. */
  renewed?: number;
  waitMs?: number;
  roundTripMs?: number;
  /** A `batch` line: the tasks of one batch handler call. */
  size?: number;
  /** fence-child.ts: a `fenced` line's fence (ctx.fence), a `foreignWrite` line's rows changed by each conditional write. */
  fence?: number;
  updated?: number;
  upserted?: number;
}

const running = new Set<ChildWorker>();

export class ChildWorker {
  readonly events: ChildEvent[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private stderr = '';

  /** `script`: another child program taking its JSON config from TL_CHILD (test/faults/fault-child.ts). */
  constructor(
    readonly config: ChildConfig | { label: string },
    script = join(import.meta.dirname, 'worker-child.ts'),
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, TL_CHILD: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buffered = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          this.events.push(JSON.parse(line) as ChildEvent);
        } catch {
          this.stderr += `${line}\n`;
        }
      }
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    running.add(this);
    void this.exited.then(() => running.delete(this));
  }

  /** The end of what the child wrote that was not an event line (its stderr, a crash's stack). */
  stderrTail(chars = 2000): string {
    return this.stderr.slice(-chars);
  }

  get pid(): number {
    return this.child.pid!;
  }

  has(event: string, id?: string): boolean {
    return this.events.some((e) => e.event === event && (id === undefined || e.id === id));
  }

  count(event: string): number {
    return this.events.filter((e) => e.event === event).length;
  }

  async until(event: string, timeoutMs = 30_000, id?: string): Promise<ChildEvent> {
    return waitFor(
      () => this.events.find((e) => e.event === event && (id === undefined || e.id === id)),
      `${this.config.label}: ${event}${id ? ` ${id}` : ''}\n${this.stderr}`,
      timeoutMs,
      20,
    );
  }

  signal(name: NodeJS.Signals): void {
    const gone = this.exitCode();
    // A child that died on its own is the finding, not the signal's ESRCH: say how it ended and what it wrote.
    if (gone !== undefined) throw new Error(`${this.config.label} had already exited (code ${gone}) before ${name}; its stderr:\n${this.stderr}`);
    process.kill(this.pid, name);
  }

  /** SIGTERM (graceful stop) and the ids its handlers completed. */
  async stop(timeoutMs = 30_000): Promise<string[]> {
    this.signal('SIGTERM');
    const stopped = await this.until('stopped', timeoutMs);
    await this.exited;
    return stopped.completed ?? [];
  }

  /** The exit code once the process has exited (null: killed by a signal), undefined while it runs. */
  exitCode(): number | null | undefined {
    return this.child.exitCode ?? (this.child.signalCode !== null ? null : undefined);
  }

  async exit(): Promise<number | null> {
    return this.exited;
  }

  get log(): string {
    return this.stderr;
  }
}

/** Kills (SIGKILL, by pid) every child still alive: for afterEach, so a failed test leaks no process. */
export async function killAllChildren(): Promise<void> {
  const alive = [...running];
  for (const child of alive) {
    try {
      child.signal('SIGCONT');
      child.signal('SIGKILL');
    } catch {
      // already gone
    }
  }
  await Promise.all(alive.map((child) => child.exit()));
}

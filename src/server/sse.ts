/**
 * Server-Sent Events: one task's status and progress until it ends, and the
 * caller's active tasks. Works across processes by polling the store with an
 * adaptive interval (minPollMs after a change, growing ×1.5 to maxPollMs while
 * nothing changes); an in-process worker's events wake a stream at once and
 * carry progress between flushes. Events: `task` (the task), `progress`,
 * `end` (terminal status; the server then closes), `error` (store trouble; it keeps trying).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TaskLeaseClient } from '../client/client.js';
import { AccessError } from '../core/errors.js';
import { scopeOwner, type Scope } from '../core/scope.js';
import { isTerminal, type TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import type { ResolvedSse } from './options.js';
import { taskView } from './task-view.js';
import type { TaskEventHub, TaskSignal } from './task-events.js';

const ACTIVE: readonly TaskStatus[] = ['QUEUED', 'RUNNING', 'RETRY_WAIT', 'PAUSED', 'CANCEL_REQUESTED'];

export class SseStreams {
  private readonly open = new Set<SseStream>();
  /** Open streams per identity (Principal.identity): one caller cannot take every stream the server has. */
  private readonly perIdentity = new Map<string, number>();
  constructor(private readonly options: ResolvedSse) {}

  start(request: FastifyRequest, reply: FastifyReply): SseStream {
    if (this.open.size >= this.options.maxStreams)
      throw new AccessError('RATE_LIMITED', `the server has ${this.open.size} open streams, its limit: retry later`);
    const principal = request.principal;
    const identity = principal?.identity ?? 'anonymous';
    const mine = this.perIdentity.get(identity) ?? 0;
    if (mine >= this.options.maxStreamsPerIdentity)
      throw new AccessError('RATE_LIMITED', `this credential has ${mine} open streams, its limit (sse.maxStreamsPerIdentity): close one first`);
    this.perIdentity.set(identity, mine + 1);
    const stream = new SseStream(
      request,
      reply,
      this.options.keepAliveMs,
      (task) => taskView(principal, task),
      () => {
        this.open.delete(stream);
        const left = (this.perIdentity.get(identity) ?? 1) - 1;
        if (left > 0) this.perIdentity.set(identity, left);
        else this.perIdentity.delete(identity);
      },
    );
    this.open.add(stream);
    return stream;
  }

  get size(): number {
    return this.open.size;
  }

  /** Shutdown: every stream ends, so the server can drain. */
  closeAll(): void {
    for (const stream of [...this.open]) stream.end();
  }
}

export class SseStream {
  closed = false;
  private wakeUp: (() => void) | null = null;
  private readonly keepAlive: NodeJS.Timeout;

  constructor(
    request: FastifyRequest,
    private readonly reply: FastifyReply,
    keepAliveMs: number,
    private readonly view: (task: Task) => object,
    private readonly onEnd: () => void,
  ) {
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': request.id,
      'x-content-type-options': 'nosniff',
    });
    reply.raw.write(`retry: 2000\n\n`);
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), keepAliveMs);
    request.raw.on('close', () => this.end());
  }

  send(event: string, data: unknown): void {
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** A `task` event, as much of the task as the caller may see. */
  sendTask(task: Task): void {
    this.send('task', this.view(task));
  }

  /** Resolves after `ms`, or sooner when woken or closed. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this; // eslint-disable-line @typescript-eslint/no-this-alias
      function done(): void {
        clearTimeout(timer);
        self.wakeUp = null;
        resolve();
      }
      this.wakeUp = done;
      if (this.closed) done();
    });
  }

  wake(): void {
    this.wakeUp?.();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    this.wake();
    this.reply.raw.end();
    this.onEnd();
  }

  private write(text: string): void {
    if (!this.closed && this.reply.raw.writable) this.reply.raw.write(text);
  }
}

/** What changes a subscriber wants to see. */
function signature(task: Task): string {
  return `${task.status}|${task.updatedAt.getTime()}|${task.attemptCount}|${JSON.stringify(task.progress)}`;
}

interface StreamDeps {
  client: TaskLeaseClient;
  events: TaskEventHub;
  sse: ResolvedSse;
}

export async function streamTask(stream: SseStream, deps: StreamDeps, id: string, scope: Scope): Promise<void> {
  const off = deps.events.onTask(id, (signal) => relay(stream, signal));
  const poller = new AdaptivePoll(deps.sse);
  let last = '';
  try {
    while (!stream.closed) {
      const task = await poller.guard(stream, () => deps.client.get(id, { scope }));
      if (task === null) {
        stream.send('end', { id, status: null, reason: 'NOT_FOUND' });
        break;
      }
      if (task) {
        const current = signature(task);
        poller.changed(current !== last);
        if (current !== last) stream.sendTask(task);
        last = current;
        if (isTerminal(task.status)) {
          stream.send('end', { id, status: task.status });
          break;
        }
      }
      await stream.wait(poller.interval);
    }
  } finally {
    off();
    stream.end();
  }
}

/** A bulk operation (client/bulk.ts): `progress` with the operation after each batch it saved, `end` when it ended. */
export async function streamBulk(stream: SseStream, deps: StreamDeps, id: string, scope: Scope): Promise<void> {
  const poller = new AdaptivePoll(deps.sse);
  let last = '';
  try {
    while (!stream.closed) {
      const operation = await poller.guard(stream, () => deps.client.bulk.get(id, { scope }));
      if (operation === null) {
        stream.send('end', { id, status: null, reason: 'NOT_FOUND' });
        break;
      }
      if (operation) {
        const current = `${operation.status}|${operation.processed}|${operation.cancelRequested}`;
        poller.changed(current !== last);
        if (current !== last) stream.send('progress', operation);
        last = current;
        if (operation.status !== 'RUNNING') {
          stream.send('end', { id, status: operation.status });
          break;
        }
      }
      await stream.wait(poller.interval);
    }
  } finally {
    stream.end();
  }
}

/** The caller's active tasks (all tasks for admin and operator): each change, and each task's end. */
export async function streamMyTasks(stream: SseStream, deps: StreamDeps, scope: Scope): Promise<void> {
  const owner = scopeOwner(scope);
  const off = deps.events.onAny((signal) => {
    if (owner === null || signal.task.owner === owner) relay(stream, signal);
  });
  const poller = new AdaptivePoll(deps.sse);
  const seen = new Map<string, string>();
  try {
    while (!stream.closed) {
      const page = await poller.guard(stream, () => deps.client.list({ scope, status: ACTIVE, limit: 200 }));
      if (page) poller.changed(await publishChanges(stream, deps.client, scope, seen, page.tasks));
      await stream.wait(poller.interval);
    }
  } finally {
    off();
    stream.end();
  }
}

async function publishChanges(stream: SseStream, client: TaskLeaseClient, scope: Scope, seen: Map<string, string>, active: Task[]): Promise<boolean> {
  let changed = false;
  const now = new Set<string>();
  for (const task of active) {
    now.add(task.id);
    const current = signature(task);
    if (seen.get(task.id) === current) continue;
    changed = true;
    stream.sendTask(task);
    seen.set(task.id, current);
  }
  for (const id of [...seen.keys()].filter((known) => !now.has(known))) {
    seen.delete(id);
    const task = await client.get(id, { scope });
    changed = true;
    if (task) stream.sendTask(task);
    stream.send('end', { id, status: task?.status ?? null });
  }
  return changed;
}

function relay(stream: SseStream, signal: TaskSignal): void {
  if (signal.progress) stream.send('progress', { id: signal.task.id, progress: signal.progress });
  stream.wake();
}

class AdaptivePoll {
  interval: number;
  private failing = false;

  constructor(private readonly sse: ResolvedSse) {
    this.interval = sse.minPollMs;
  }

  changed(yes: boolean): void {
    this.interval = yes ? this.sse.minPollMs : Math.min(this.sse.maxPollMs, Math.round(this.interval * 1.5));
  }

  /** The read's answer, or undefined when the store failed (one `error` event per outage; polling slows and goes on). */
  async guard<T>(stream: SseStream, read: () => Promise<T>): Promise<T | undefined> {
    try {
      const value = await read();
      this.failing = false;
      return value;
    } catch (error) {
      if (!this.failing) stream.send('error', { code: (error as { code?: string }).code ?? 'INTERNAL', message: 'the store did not answer; retrying' });
      this.failing = true;
      this.interval = this.sse.maxPollMs;
      return undefined;
    }
  }
}

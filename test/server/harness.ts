/**
 * A real listening tasklease server for the HTTP tests: its own store, an
 * in-process worker for the test task types, tokens for every role (two
 * users, alice and bob), and `call` over real sockets (fetch).
 */
import { defineTask, TaskFailure } from '../../src/index.js';
import { createServer, type ServerOptions, type TaskleaseServer } from '../../src/server/index.js';
import type { Store } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';

/** Lets a test step a running task: each release() lets it report one more step of progress. */
export class Gate {
  private waiting: (() => void)[] = [];
  private credit = 0;
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.credit += 1;
  }
  pass(): Promise<void> {
    if (this.credit > 0) return Promise.resolve(void (this.credit -= 1));
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}

export const gate = new Gate();

export const TEST_TASKS = [
  defineTask({ type: 'test.idle', execute: () => undefined }),
  defineTask({
    type: 'test.fail',
    maxAttempts: 1,
    execute: () => {
      throw new TaskFailure('always fails', { code: 'TEST_FAIL', retryable: false });
    },
  }),
  defineTask({
    type: 'test.gated',
    execute: async (ctx) => {
      for (let step = 1; step <= 3; step++) {
        await gate.pass();
        ctx.reportProgress({ total: 3, processed: step, message: `step ${step}` });
      }
      await gate.pass();
    },
  }),
  defineTask({
    type: 'test.logged',
    execute: (ctx) => {
      ctx.log.info('fetched page', { page: 1, token: 'secret-token' });
      ctx.log.warn('slow upstream', { ms: 900 });
    },
  }),
];

export type Role = 'admin' | 'operator' | 'alice' | 'bob';

export interface Running {
  server: TaskleaseServer;
  url: string;
  tokens: Record<Role, string>;
  call(
    method: string,
    path: string,
    options?: { as?: Role | null; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<Answer>;
  close(): Promise<void>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export async function startTestServer(store: Store, options: Partial<ServerOptions> = {}): Promise<Running> {
  const server = await createServer({
    store,
    tasks: TEST_TASKS,
    port: 0,
    logger: false,
    worker: {
      pollIntervalMs: 50,
      minPollIntervalMs: 10,
      heartbeatIntervalMs: 500,
      leaseMs: 5000,
      progressFlushIntervalMs: 0,
      progressFlushThreshold: 1,
      recoveryIntervalMs: 0,
      concurrency: 8,
    },
    failedAuthLimit: { max: 100_000, windowMs: 60_000 },
    sse: { minPollMs: 20, maxPollMs: 200 },
    ...options,
  });
  const url = await server.listen();
  const mint = async (role: 'admin' | 'operator' | 'user', owner?: string) =>
    (await server.client.tokens.create({ name: `test ${owner ?? role}`, role, ...(owner ? { owner } : {}) })).token;
  const tokens: Record<Role, string> = {
    admin: await mint('admin'),
    operator: await mint('operator'),
    alice: await mint('user', 'alice'),
    bob: await mint('user', 'bob'),
  };
  return {
    server,
    url,
    tokens,
    async call(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      const token = options.token ?? (options.as ? tokens[options.as] : undefined);
      if (token) headers.authorization = `Bearer ${token}`;
      let body: string | undefined = options.rawBody;
      if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      const response = await fetch(`${url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
      const text = await response.text();
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    close: () => server.close(),
  };
}

/** A FAILED test.fail task (and its dead letter), made through the worker. */
export async function failedTask(running: Running): Promise<{ taskId: string; deadLetterId: string }> {
  const { task } = await running.server.client.submit('test.fail', {});
  await waitFor(async () => (await running.server.client.get(task.id))?.status === 'FAILED', `task ${task.id} FAILED`);
  const letters = await running.server.client.deadLetters.list({ taskType: 'test.fail', limit: 1000 });
  const letter = letters.find((l) => l.originalTaskId === task.id && l.replayedAt === null && l.archivedAt === null)!;
  return { taskId: task.id, deadLetterId: letter.id };
}

/** Reads an SSE response event by event. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function* sseEvents(response: Response): AsyncGenerator<{ event: string; data: any }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data) yield { event, data: JSON.parse(data) };
    }
  }
}

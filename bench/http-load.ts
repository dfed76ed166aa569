/**
 * HTTP load check, loopback only, bounded: a server on a fresh
 * SQLite file (or BENCH_DATABASE_URL), no worker, autocannon against
 * POST /api/v1/tasks (submit) and GET /api/v1/tasks/:id (get).
 *
 *   npx tsx bench/http-load.ts            # 10 s each, 50 connections
 *   DURATION=5 CONNECTIONS=20 npx tsx bench/http-load.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { defineTask } from '../src/index.js';
import { startServer } from '../src/server/index.js';

const duration = Number(process.env.DURATION ?? 10);
const connections = Number(process.env.CONNECTIONS ?? 50);
const dir = mkdtempSync(join(tmpdir(), 'tasklease-http-'));
const server = await startServer({
  databaseUrl: process.env.BENCH_DATABASE_URL ?? `sqlite:${join(dir, 'bench.db')}`,
  migrate: true,
  port: 0,
  logger: false,
  tasks: [defineTask({ type: 'bench.noop', execute: () => undefined })],
});
const { token } = await server.client.tokens.create({ name: 'bench', role: 'user', owner: 'bench' });
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const { task } = await server.client.submit('bench.noop', { hello: 'world' }, { owner: 'bench' });

async function run(title: string, path: string, options: Partial<autocannon.Options>): Promise<void> {
  const result = await autocannon({ url: `${server.url}${path}`, connections, duration, headers, ...options });
  const errors = result.non2xx + result.errors;
  console.log(
    `${title.padEnd(8)} ${Math.round(result.requests.average).toString().padStart(6)} req/s   p50 ${result.latency.p50} ms   p99 ${result.latency.p99} ms   ${result.requests.total} requests, ${errors} errors`,
  );
}

console.log(`tasklease HTTP load: ${server.store.dialect}, ${connections} connections, ${duration} s each, loopback`);
await run('submit', '/api/v1/tasks', { method: 'POST', body: JSON.stringify({ type: 'bench.noop', payload: { hello: 'world' } }) });
await run('get', `/api/v1/tasks/${task.id}`, { method: 'GET' });
await server.close();
rmSync(dir, { recursive: true, force: true });

/**
 * Request logs: at the default level (info) a server that only answers
 * requests stays quiet; at debug, one line per request with its method, URL,
 * status and time.
 */
import { Writable } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import { startServer, type TaskleaseServer } from '../../src/server/index.js';
import type { Store } from '../../src/store/types.js';
import { sqliteFactory } from '../helpers/sqlite.js';

let store: Store | undefined;
let server: (TaskleaseServer & { url: string }) | undefined;
afterEach(async () => {
  await server?.close();
  if (store) await sqliteFactory.destroy(store);
  server = store = undefined;
});

async function logLinesOfOneRequest(level: string): Promise<{ msg: string; level: number; statusCode?: number; url?: string }[]> {
  const lines: string[] = [];
  const stream = new Writable({ write: (chunk, _encoding, done) => void (lines.push(...String(chunk).split('\n').filter(Boolean)), done()) });
  store = await sqliteFactory.create();
  server = await startServer({ store, port: 0, worker: false, logger: { level, stream } });
  expect((await fetch(`${server.url}/actuator/health/liveness`)).status).toBe(200);
  await server.close();
  return lines.map((line) => JSON.parse(line) as { msg: string; level: number });
}

it('logs no line per request at the default level', async () => {
  const lines = await logLinesOfOneRequest('info');
  expect(lines.filter((line) => /request/.test(line.msg))).toEqual([]);
});

it('logs one line per request at debug', async () => {
  const lines = await logLinesOfOneRequest('debug');
  expect(lines.filter((line) => /request/.test(line.msg))).toEqual([
    expect.objectContaining({ msg: 'request', level: 20, statusCode: 200, url: '/actuator/health/liveness' }),
  ]);
});

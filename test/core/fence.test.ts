/**
 * The receiving side of fencing tokens (core/fence.ts): the header written and
 * read, FenceGate, the object-store compare-and-set; an HTTP receiver (a real
 * node:http server) that refuses a stale attempt's call; and SQLite's durable
 * renewal (synchronous = FULL for that one transaction, NORMAL again after).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FenceError } from '../../src/core/errors.js';
import { FENCE_HEADER, FenceGate, fenceHeader, parseFenceHeader, writeFencedObject, type ConditionalObjectStore } from '../../src/index.js';
import { durably } from '../../src/store/sqlite/leases.js';

describe('the fence header', () => {
  it('round-trips a task id (any text, URI-encoded) and a fence', () => {
    expect(fenceHeader('0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 7)).toBe('0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b:7');
    for (const taskId of ['plain', 'a:b/c d', 'ünï', '42']) expect(parseFenceHeader(fenceHeader(taskId, 12))).toEqual({ taskId, fence: 12 });
    expect(parseFenceHeader([' t1:3 '])).toEqual({ taskId: 't1', fence: 3 });
  });

  it('refuses what is not <task id>:<whole number ≥ 1> with FENCE_INVALID', () => {
    for (const value of [
      undefined,
      null,
      '',
      't1',
      ':3',
      't1:',
      't1:0',
      't1:-1',
      't1:1.5',
      't1:03',
      't1:x',
      't1:99999999999999999',
      '%E0%A4%A:1',
      ['t1:1', 't1:2'],
      [],
    ]) {
      expect(() => parseFenceHeader(value as string), JSON.stringify(value)).toThrow(expect.objectContaining({ code: 'FENCE_INVALID' }));
    }
    for (const fence of [0, -1, 1.5, Number.NaN, Infinity, '3']) {
      expect(() => fenceHeader('t1', fence as number)).toThrow(expect.objectContaining({ code: 'FENCE_INVALID' }));
    }
    expect(() => fenceHeader('', 1)).toThrow(FenceError);
  });
});

describe('FenceGate', () => {
  it('admits a fence only when it is newer than every one admitted for the key; keys are apart', () => {
    const gate = new FenceGate();
    expect([gate.admit('t1', 2), gate.admit('t1', 2), gate.admit('t1', 1), gate.admit('t1', 3), gate.admit('t2', 1)]).toEqual([true, false, false, true, true]);
    expect([gate.last('t1'), gate.last('t2'), gate.last('t3')]).toEqual([3, 1, undefined]);
    expect(() => gate.check('t1', 3)).toThrow(expect.objectContaining({ code: 'FENCE_STALE', lastFence: 3 }));
    expect(() => gate.admit('t1', 0)).toThrow(expect.objectContaining({ code: 'FENCE_INVALID' }));
  });

  it('with allowEqual, the same attempt may write again; an older one still may not', () => {
    const gate = new FenceGate({ allowEqual: true });
    expect([gate.admit('r', 5), gate.admit('r', 5), gate.admit('r', 4)]).toEqual([true, true, false]);
  });
});

describe('an HTTP receiver that checks the Tasklease-Fence header', () => {
  let server: Server;
  let url: string;
  const gate = new FenceGate();
  const applied: string[] = [];

  /** A partner's API: 400 for a missing or bad header, 409 for a stale fence, else the write lands. */
  async function receive(request: IncomingMessage): Promise<{ status: number; body: unknown }> {
    let body = '';
    for await (const chunk of request) body += String(chunk);
    try {
      const { taskId, fence } = parseFenceHeader(request.headers[FENCE_HEADER.toLowerCase()]);
      gate.check(taskId, fence);
      applied.push(`${taskId}@${fence}:${body}`);
      return { status: 200, body: { applied: true } };
    } catch (error) {
      if (!(error instanceof FenceError)) throw error;
      return { status: error.code === 'FENCE_STALE' ? 409 : 400, body: { code: error.code, lastFence: error.lastFence } };
    }
  }

  beforeAll(async () => {
    server = createServer((request, response) => {
      void receive(request).then(({ status, body }) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/charge`;
  });
  afterAll(async () => {
    server.close();
    await once(server, 'close');
  });

  const call = async (headers: Record<string, string>, body: string) => {
    const response = await fetch(url, { method: 'POST', headers, body });
    return [response.status, await response.json()];
  };

  it('takes the new holder’s call and refuses the zombie’s late one (409) and a call without a fence (400)', async () => {
    expect(await call({ [FENCE_HEADER]: fenceHeader('task-1', 1) }, 'first')).toEqual([200, { applied: true }]);
    expect(await call({ [FENCE_HEADER]: fenceHeader('task-1', 2) }, 'rescuer')).toEqual([200, { applied: true }]);
    expect(await call({ [FENCE_HEADER]: fenceHeader('task-1', 1) }, 'zombie')).toEqual([409, { code: 'FENCE_STALE', lastFence: 2 }]);
    expect(await call({}, 'anonymous')).toEqual([400, { code: 'FENCE_INVALID', lastFence: null }]);
    expect(applied).toEqual(['task-1@1:first', 'task-1@2:rescuer']);
  });
});

/** An object store with S3's conditional PUT (If-Match / If-None-Match: *), in memory; `race` runs before a PUT. */
function memoryObjectStore(race: () => Promise<void> = async () => undefined) {
  const objects = new Map<string, { body: string; fence: number; etag: string }>();
  let version = 0;
  const store: ConditionalObjectStore<string> = {
    async head(key) {
      const object = objects.get(key);
      return object ? { fence: object.fence, etag: object.etag } : null;
    },
    async put(key, body, fence, ifMatch) {
      await race();
      const current = objects.get(key);
      if ((ifMatch === null && current) || (ifMatch !== null && current?.etag !== ifMatch)) return false; // 412
      objects.set(key, { body, fence, etag: `"v${++version}"` });
      return true;
    },
  };
  return { store, objects };
}

describe('writeFencedObject (an object-store write with a precondition)', () => {
  it('writes over an older fence, refuses an equal or older one', async () => {
    const { store, objects } = memoryObjectStore();
    expect(await writeFencedObject(store, 'report.csv', 2, 'by attempt 2')).toBe('written');
    expect(await writeFencedObject(store, 'report.csv', 1, 'by the zombie')).toBe('stale');
    expect(await writeFencedObject(store, 'report.csv', 2, 'attempt 2 again')).toBe('stale');
    expect(await writeFencedObject(store, 'report.csv', 3, 'by attempt 3')).toBe('written');
    expect(objects.get('report.csv')).toMatchObject({ body: 'by attempt 3', fence: 3 });
  });

  it('a newer writer that lands between the read and the write fails the precondition: the zombie reads again and gives up', async () => {
    let racing: (() => Promise<unknown>) | null = null;
    const { store, objects } = memoryObjectStore(async () => {
      const race = racing;
      racing = null;
      await race?.();
    });
    await writeFencedObject(store, 'k', 1, 'first');
    racing = () => writeFencedObject(store, 'k', 3, 'newer');
    expect(await writeFencedObject(store, 'k', 2, 'zombie')).toBe('stale');
    expect(objects.get('k')).toMatchObject({ body: 'newer', fence: 3 });
    // Created only if absent: two first writers, the newer fence wins either way.
    racing = () => writeFencedObject(store, 'fresh', 1, 'older');
    expect(await writeFencedObject(store, 'fresh', 2, 'newer')).toBe('written');
    expect(objects.get('fresh')).toMatchObject({ body: 'newer', fence: 2 });
  });
});

describe('SQLite: the durable renewal', () => {
  it('runs its write with synchronous = FULL and leaves the connection at NORMAL, even when the write throws', () => {
    const db = new Database(':memory:');
    db.pragma('synchronous = NORMAL');
    const level = () => db.pragma('synchronous', { simple: true });
    expect(durably(db, level)).toBe(2);
    expect(level()).toBe(1);
    expect(() =>
      durably(db, () => {
        throw new Error('busy');
      }),
    ).toThrow('busy');
    expect(level()).toBe(1);
    db.close();
  });
});

/** Bad input gets a typed error with a clear message and writes nothing. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { InvalidOptionsError, PayloadInvalidError, PayloadTooLargeError, UnknownTaskTypeError, ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Store } from '../../src/store/types.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { sqliteFactory } from '../helpers/sqlite.js';

const order = defineTask({ type: 'order', schema: z.object({ orderId: z.string().min(1), qty: z.number().int().positive() }), execute: () => undefined });

describe('submit rejects bad input and writes nothing', () => {
  let store: Store;
  let client: TaskLeaseClient;
  beforeEach(async () => {
    store = await sqliteFactory.create();
    client = createClient({ store, tasks: [order], maxPayloadBytes: 1000 });
  });
  afterEach(() => sqliteFactory.destroy(store));

  const nothingWritten = async () => expect((await store.listTasks({ scope: Scope.global(), limit: 10 })).tasks).toEqual([]);
  const valid = { orderId: 'o-1', qty: 1 };

  it('an unknown type', async () => {
    await expect(client.submit('no-such-type', valid)).rejects.toThrow(UnknownTaskTypeError);
    await expect(client.submit('no-such-type', valid)).rejects.toMatchObject({ code: 'UNKNOWN_TASK_TYPE', message: expect.stringContaining('no-such-type') });
    await nothingWritten();
  });

  it('a payload that fails its schema, naming the path', async () => {
    const error = await client.submit(order, { orderId: '', qty: 1.5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadInvalidError);
    expect((error as Error).message).toMatch(/orderId/);
    expect((error as PayloadInvalidError).issues.map((i) => i.path)).toEqual(['orderId', 'qty']);
    await nothingWritten();
  });

  it('a batch with a bad schema-less task after schema-checked ones: one typed error, nothing written, nothing unhandled', async () => {
    const mixed = createClient({ store, tasks: [order, defineTask({ type: 'plain' })] });
    const error = await mixed
      .submitMany([
        { type: 'order', payload: { orderId: '', qty: 0 } }, // its schema check fails after the batch is already rejected
        { type: 'order', payload: valid },
        { type: 'plain', payload: {}, priority: 5000 },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('priority');
    expect((error as Error).message).toMatch(/task #2/);
    await nothingWritten();
  });

  it('a payload over the size limit', async () => {
    const error = await client.submit(order, { orderId: 'x'.repeat(2000), qty: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as Error).message).toMatch(/over the limit of 1000 bytes/);
    await nothingWritten();
  });

  it('the default size limit is 1 MiB', async () => {
    const big = createClient({ store, tasks: [defineTask({ type: 'blob' })] });
    await expect(big.submit('blob', { data: 'x'.repeat(1024 * 1024) })).rejects.toThrow(PayloadTooLargeError);
    await expect(big.submit('blob', { data: 'x'.repeat(1024 * 1024 - 20) })).resolves.toMatchObject({ created: true });
  });

  it.each([
    ['priority', { priority: 1001 }],
    ['priority', { priority: 1.5 }],
    ['delayMs', { delayMs: -1 }],
    ['delayMs', { delayMs: Number.NaN }],
    ['maxAttempts', { maxAttempts: 0 }],
    ['maxAttempts', { maxAttempts: 101 }],
    ['availableAt', { availableAt: new Date('nope') }],
    ['deadlineAt', { deadlineAt: new Date(Date.now() - 1000) }],
    ['delayMs', { delayMs: 10, availableAt: new Date() }],
    ['owner', { owner: '' }],
    ['idempotencyKey', { idempotencyKey: 'k'.repeat(256) }],
  ])('an out-of-range %s', async (field, options) => {
    const error = await client.submit(order, valid, options as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect((error as Error).message).toContain(field);
    await nothingWritten();
  });

  it('a payload that is not JSON', async () => {
    const blob = createClient({ store, tasks: [defineTask({ type: 'blob' })] });
    await expect(blob.submit('blob', { n: 10n })).rejects.toMatchObject({ code: 'PAYLOAD_INVALID' });
    await nothingWritten();
  });

  it('a batch with one bad task writes none of it', async () => {
    const error = await client
      .submitMany([
        { type: 'order', payload: valid },
        { type: 'order', payload: { orderId: 'o-2', qty: -1 } },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadInvalidError);
    await nothingWritten();
  });

  it('hostile type names at definition', () => {
    expect(() => defineTask({ type: '' })).toThrow(ValidationError);
    expect(() => defineTask({ type: 'x'.repeat(10_000) })).toThrow(/200/);
    expect(() => defineTask({ type: 'a\u0000b' })).toThrow(/control/);
    expect(() => defineTask({ type: 'a\ud800b' })).toThrow(/surrogate/);
    expect(defineTask({ type: "x'; DROP TABLE system_async_task; --" }).type).toContain('DROP');
  });
});

describe('bad worker and client options fail at start, naming the field', () => {
  const store = new SqliteStore({ path: ':memory:' });
  const task = defineTask({ type: 't', execute: () => undefined });
  it.each([
    ['concurrency', { concurrency: 0 }],
    ['concurrency', { concurrency: 2.5 }],
    ['prefetch', { prefetch: -1 }],
    ['leaseMs', { leaseMs: 'long' }],
    ['heartbeatIntervalMs', { leaseMs: 1000, heartbeatIntervalMs: 900 }],
    ['retry.jitter', { retry: { jitter: -0.1 } }],
    ['pollIntervalMs', { pollIntervalMs: 0 }],
    ['colour', { colour: 'blue' }],
  ])('%s', (field, options) => {
    const error = (() => {
      try {
        createWorker({ store, tasks: [task], ...(options as object) });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toContain(`"${field}"`);
  });

  it('an actor for the action history: a string or { id, name } of 1 to 255 characters without NUL', async () => {
    expect(() => createClient({ store, tasks: [], actor: '' })).toThrow(ValidationError);
    expect(() => createClient({ store, tasks: [], actor: { id: 'x'.repeat(256) } })).toThrow(/actor\.id/);
    expect(() => createClient({ store, tasks: [], actor: { id: 'ops', name: 'a\u0000b' } })).toThrow(/NUL/);
    expect(createClient({ store, tasks: [], actor: 'deploy-bot' }).actor).toEqual({ id: 'deploy-bot', name: null });
    expect(createClient({ store, tasks: [] }).actor).toEqual({ id: 'library', name: null });
    await expect(createClient({ store, tasks: [] }).pause('no-such-task', { actor: { id: '' } })).rejects.toThrow(ValidationError);
  });

  it('a worker needs handlers, a client valid limits', () => {
    expect(() => createWorker({ store, tasks: [] })).toThrow(/tasks/);
    expect(() => createWorker({ store, tasks: [defineTask({ type: 'contract-only' })] })).toThrow(/execute/);
    expect(() => createClient({ store, tasks: [], maxPayloadBytes: -5 })).toThrow(/maxPayloadBytes/);
    expect(() => createClient({ store, tasks: [task, task] })).toThrow(/twice/);
  });
});

/**
 * Search by payload and idempotency-key prefix (client.list, issue 29) on
 * every store: typed equality (string, number, boolean, nested), string
 * prefixes, key prefixes holding % and _, no match, refused paths and values,
 * owner scope, and the filters combined with status and type. An encrypted
 * type's payloads are never found. Each dialect runs it from test/search/<dialect>.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createClient, type ListOptions, type TaskLeaseClient } from '../../src/client/client.js';
import { payloadEncryption } from '../../src/client/encryption.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';

const HOUR = 3_600_000;
const TASKS = ['order.ship', 'order.refund', 'crm.sync', 'billing.invoice', 'billing.refund', 'medical.import'].map((type) => defineTask<unknown>({ type }));

export function runSearchSuite(factory: StoreFactory): void {
  describe(`search by payload on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    const client = (): TaskLeaseClient => createClient({ store: env.store, tasks: TASKS });
    const submit = async (type: string, payload: unknown, options: { owner?: string; idempotencyKey?: string } = {}): Promise<string> =>
      (await client().submit(type, payload, { delayMs: HOUR, ...options })).task.id;
    const found = async (options: ListOptions): Promise<string[]> => (await client().list(options)).tasks.map((task) => task.id).sort();

    it('matches equality by type: strings, numbers, booleans, nested fields', async () => {
      const n42 = await submit('order.ship', { order: { id: 42, express: true }, customer: { name: 'Ada Lovelace' } });
      const s42 = await submit('order.ship', { order: { id: '42', express: false }, customer: { name: 'ada' } });
      const n42f = await submit('order.ship', { order: { id: 42.0 }, flag: 1 });
      const other = await submit('order.ship', { order: { id: 43 }, flag: true, customer: { name: 'Grace' } });
      expect(await found({ payload: [{ path: 'order.id', equals: 42 }] })).toEqual([n42, n42f].sort());
      expect(await found({ payload: [{ path: 'order.id', equals: '42' }] })).toEqual([s42]);
      expect(await found({ payload: [{ path: 'order.express', equals: true }] })).toEqual([n42]);
      expect(await found({ payload: [{ path: 'order.express', equals: false }] })).toEqual([s42]);
      // true is not 1, and 1 is not true.
      expect(await found({ payload: [{ path: 'flag', equals: true }] })).toEqual([other]);
      expect(await found({ payload: [{ path: 'flag', equals: 1 }] })).toEqual([n42f]);
      // Strings compare exactly (case-sensitive); an object is not its field.
      expect(await found({ payload: [{ path: 'customer.name', equals: 'Ada Lovelace' }] })).toEqual([n42]);
      expect(await found({ payload: [{ path: 'customer.name', equals: 'ADA LOVELACE' }] })).toEqual([]);
      expect(await found({ payload: [{ path: 'order', equals: 42 }] })).toEqual([]);
    });

    it('matches string prefixes, case-sensitively, with % and _ as plain characters', async () => {
      const ada = await submit('crm.sync', { customer: { name: 'Ada Lovelace' } });
      const adam = await submit('crm.sync', { customer: { name: 'Adam' } });
      await submit('crm.sync', { customer: { name: 'ada' } });
      await submit('crm.sync', { customer: { name: 42 } });
      const percent = await submit('crm.sync', { customer: { name: '50%_off' } });
      await submit('crm.sync', { customer: { name: '50xxoff' } });
      expect(await found({ payload: [{ path: 'customer.name', prefix: 'Ada' }] })).toEqual([ada, adam].sort());
      expect(await found({ payload: [{ path: 'customer.name', prefix: 'Ada ' }] })).toEqual([ada]);
      expect(await found({ payload: [{ path: 'customer.name', prefix: '50%_' }] })).toEqual([percent]);
      expect(await found({ payload: [{ path: 'customer.name', prefix: '4' }] })).toEqual([]);
    });

    it('finds idempotency keys by prefix, % and _ matching only themselves', async () => {
      const a = await submit('billing.invoice', {}, { idempotencyKey: 'inv-2026-001' });
      const b = await submit('billing.refund', {}, { idempotencyKey: 'inv-2026-002' });
      const odd = await submit('billing.invoice', {}, { idempotencyKey: 'inv_%-1' });
      await submit('billing.invoice', {}, { idempotencyKey: 'invX-1' });
      await submit('billing.invoice', {}, { idempotencyKey: 'INV-2026-003' });
      await submit('billing.invoice', {});
      expect(await found({ idempotencyKeyPrefix: 'inv-' })).toEqual([a, b].sort());
      expect(await found({ idempotencyKeyPrefix: 'inv_%' })).toEqual([odd]);
      expect(await found({ idempotencyKeyPrefix: 'inv_' })).toEqual([odd]);
      expect(await found({ idempotencyKeyPrefix: 'inv-2026-001' })).toEqual([a]);
      expect(await found({ idempotencyKeyPrefix: 'nope' })).toEqual([]);
    });

    it('ANDs several filters, and combines them with status, type and paging', async () => {
      const a = await submit('order.ship', { order: { id: 42 }, customer: { name: 'Ada' } });
      const b = await submit('order.ship', { order: { id: 42 }, customer: { name: 'Bob' } });
      const c = await submit('order.refund', { order: { id: 42 }, customer: { name: 'Ada' } });
      await client().pause(b);
      const byOrder = [{ path: 'order.id', equals: 42 }] as const;
      expect(await found({ payload: [...byOrder, { path: 'customer.name', prefix: 'Ad' }] })).toEqual([a, c].sort());
      expect(await found({ payload: byOrder, taskType: 'order.ship' })).toEqual([a, b].sort());
      expect(await found({ payload: byOrder, status: 'PAUSED' })).toEqual([b]);
      expect(await found({ payload: byOrder, status: ['QUEUED'], taskType: 'order.refund' })).toEqual([c]);
      expect(await found({ payload: [{ path: 'order.id', equals: 41 }] })).toEqual([]);
      const first = await client().list({ payload: byOrder, limit: 2 });
      expect(first.tasks).toHaveLength(2);
      const rest = await client().list({ payload: byOrder, limit: 2, cursor: first.nextCursor! });
      expect([...first.tasks, ...rest.tasks].map((t) => t.id).sort()).toEqual([a, b, c].sort());
      expect(rest.nextCursor).toBeNull();
    });

    it("keeps a user's search within their own tasks", async () => {
      const mine = await submit('order.ship', { order: { id: 7 } }, { owner: 'user:alice', idempotencyKey: 'k-alice' });
      await submit('order.ship', { order: { id: 7 } }, { owner: 'user:bob', idempotencyKey: 'k-bob' });
      const alice = Scope.owner('user:alice');
      expect(await found({ scope: alice, payload: [{ path: 'order.id', equals: 7 }] })).toEqual([mine]);
      expect(await found({ scope: alice, idempotencyKeyPrefix: 'k-' })).toEqual([mine]);
      expect(await found({ scope: alice, owner: 'user:bob', payload: [{ path: 'order.id', equals: 7 }] })).toEqual([]);
      expect(await found({ payload: [{ path: 'order.id', equals: 7 }] })).toHaveLength(2);
    });

    it('refuses bad paths and values with stable codes', async () => {
      await submit('order.ship', { order: { id: 1 } });
      const refused = async (options: ListOptions): Promise<string | undefined> =>
        client()
          .list(options)
          .then(
            () => undefined,
            (error: { code?: string }) => error.code,
          );
      for (const path of [
        '',
        'order..id',
        '.order',
        'order.',
        "order'); DROP TABLE system_async_task; --",
        'a"b',
        'a b',
        'a.b.c.d.e.f.g.h.i',
        'x'.repeat(65),
        '$.order',
      ]) {
        expect(await refused({ payload: [{ path, equals: 1 }] }), path).toBe('SEARCH_PATH_INVALID');
      }
      expect(await refused({ payload: [{ path: 'order.id', equals: Number.NaN }] })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ payload: [{ path: 'order.id', equals: null as unknown as number }] })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ payload: [{ path: 'order.id', equals: { id: 1 } as unknown as number }] })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ payload: [{ path: 'order.id', prefix: '' }] })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ payload: [{ path: 'order.id', equals: 1, prefix: '1' } as never] })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ payload: [{ path: 'order.id', equals: 'a\u0000b' }] })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ payload: Array.from({ length: 9 }, () => ({ path: 'order.id', equals: 1 })) })).toBe('SEARCH_VALUE_INVALID');
      expect(await refused({ idempotencyKeyPrefix: '' })).toBe('SEARCH_VALUE_INVALID');
      // The longest path allowed, and a hyphen, are fine.
      expect(await found({ payload: [{ path: 'a.b.c.d.e.f.g-h', equals: 1 }] })).toEqual([]);
      // The table is still there.
      expect(await found({ payload: [{ path: 'order.id', equals: 1 }] })).toHaveLength(1);
    });

    it('is not broken by a payload holding a NUL character (PostgreSQL jsonb refuses \\u0000: such a task is not found there)', async () => {
      const withNul = await submit('order.ship', { order: { id: 5 }, note: 'a\u0000b' });
      const clean = await submit('order.ship', { order: { id: 5 } });
      const hits = await found({ payload: [{ path: 'order.id', equals: 5 }] });
      expect(hits).toEqual(factory.dialect === 'postgres' ? [clean] : [withNul, clean].sort());
      expect(await found({ payload: [{ path: 'note', prefix: 'a' }] })).toEqual(factory.dialect === 'postgres' ? [] : [withNul]);
    });

    it("never finds an encrypted type's payload fields", async () => {
      const sealing = createClient({
        store: env.store,
        tasks: TASKS,
        middleware: [payloadEncryption({ keys: { k1: randomBytes(32) }, types: ['medical.import'] })],
      });
      const sealed = (await sealing.submit('medical.import', { patient: { id: 42 } }, { delayMs: HOUR })).task.id;
      expect(await found({ taskType: 'medical.import' })).toEqual([sealed]);
      expect(await found({ payload: [{ path: 'patient.id', equals: 42 }] })).toEqual([]);
      expect((await sealing.list({ payload: [{ path: 'patient.id', equals: 42 }] })).tasks).toEqual([]);
    });
  });
}

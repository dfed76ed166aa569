/**
 * Payloads and results encrypted at rest on any store (issue 28): what the
 * database holds is an envelope naming its key, the handler sees the
 * payload, rotation keeps old tasks readable, and a missing or wrong key
 * fails the task for good with its envelope intact (nothing lost: a retry
 * with the key succeeds). Fan-out children and publishes are sealed too.
 * Each dialect runs it from test/encryption/<dialect>.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { isEncrypted, payloadEncryption } from '../../src/client/encryption.js';
import { defineTask, TaskResult, type AnyTaskDefinition } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import type { StandardSchemaV1 } from '../../src/core/standard-schema.js';
import type { Task } from '../../src/core/task.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const K1 = randomBytes(32);
const K2 = randomBytes(32);

interface Record_ {
  patient: string;
  diagnosis: string;
}

const recordSchema: StandardSchemaV1<unknown, Record_> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (v) =>
      typeof v === 'object' && v !== null && typeof (v as Record_).patient === 'string'
        ? { value: v as Record_ }
        : { issues: [{ message: 'wants a patient' }] },
  },
};

export function runEncryptionSuite(factory: StoreFactory): void {
  describe(`encrypted payloads on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    async function ended(id: string): Promise<Task> {
      return waitFor(async () => {
        const task = await env.store.getTask({ id, scope: G });
        return task && ['SUCCESS', 'FAILED', 'CANCELLED'].includes(task.status) ? task : null;
      }, `task ${id} to end`);
    }

    function startWorker(tasks: AnyTaskDefinition[], keys: Record<string, Buffer>, types: string[]) {
      return env.track(createWorker({ store: env.store, tasks, ...FAST_WORKER, middleware: [payloadEncryption({ keys, types })] })).start();
    }

    it('stores an envelope naming its key; the handler reads the payload; the result is sealed; other types stay in clear', async () => {
      const seen: Record_[] = [];
      const medical = defineTask<Record_>({
        type: 'enc.medical',
        schema: recordSchema,
        execute: async (_ctx, record) => {
          seen.push(record);
          return TaskResult.success({ result: { imported: record.patient } });
        },
      });
      const plain = defineTask({ type: 'enc.plain', execute: async () => TaskResult.success({ result: { ok: 1 } }) });
      const encryption = payloadEncryption({ keys: { k1: K1 }, types: ['enc.medical'] });
      const client = createClient({ store: env.store, tasks: [medical, plain], middleware: [encryption] });
      const { task } = await client.submit(medical, { patient: 'Ada Lovelace', diagnosis: 'J45.909' });
      const other = await client.submit(plain, { visible: true });
      const stored = (await env.store.getTask({ id: task.id, scope: G }))!;
      expect(isEncrypted(stored.payload)).toBe(true);
      expect(stored.payload).toMatchObject({ $encrypted: 'aes-256-gcm', kid: 'k1' });
      expect(JSON.stringify(stored)).not.toContain('Lovelace');
      expect((await env.store.getTask({ id: other.task.id, scope: G }))!.payload).toEqual({ visible: true });
      // The schema judged the payload as given: a bad one is refused before anything is sealed or written.
      await expect(client.submit(medical, { diagnosis: 'x' } as never)).rejects.toMatchObject({ code: 'PAYLOAD_INVALID' });

      startWorker([medical, plain], { k1: K1 }, ['enc.medical']);
      const done = await ended(task.id);
      expect(seen).toEqual([{ patient: 'Ada Lovelace', diagnosis: 'J45.909' }]);
      expect(done.status).toBe('SUCCESS');
      expect(isEncrypted(done.result)).toBe(true);
      expect(JSON.stringify(done)).not.toContain('Lovelace');
      expect(client.reveal(done)).toMatchObject({ payload: { patient: 'Ada Lovelace' }, result: { imported: 'Ada Lovelace' } });
      expect((await ended(other.task.id)).result).toEqual({ ok: 1 });
    });

    it('rotates keys: the new key seals, the old one still opens what it sealed', async () => {
      const seen: string[] = [];
      const medical = defineTask<Record_>({ type: 'enc.rotate', execute: async (_ctx, r) => void seen.push(r.patient) });
      const before = createClient({ store: env.store, tasks: [medical], middleware: [payloadEncryption({ keys: { k1: K1 }, types: ['enc.rotate'] })] });
      const old = await before.submit(medical, { patient: 'old', diagnosis: '-' });
      const after = createClient({
        store: env.store,
        tasks: [medical],
        middleware: [payloadEncryption({ keys: { k1: K1, k2: K2 }, activeKeyId: 'k2', types: ['enc.rotate'] })],
      });
      const fresh = await after.submit(medical, { patient: 'new', diagnosis: '-' });
      expect([(old.task.payload as { kid: string }).kid, (fresh.task.payload as { kid: string }).kid]).toEqual(['k1', 'k2']);
      startWorker([medical], { k1: K1, k2: K2 }, ['enc.rotate']);
      expect((await ended(old.task.id)).status).toBe('SUCCESS');
      expect((await ended(fresh.task.id)).status).toBe('SUCCESS');
      expect(seen.sort()).toEqual(['new', 'old']);
    });

    it('a missing key fails the task for good with its envelope intact; a retry with the key succeeds', async () => {
      const seen: string[] = [];
      const medical = defineTask<Record_>({ type: 'enc.missing', maxAttempts: 3, execute: async (_ctx, r) => void seen.push(r.patient) });
      const client = createClient({ store: env.store, tasks: [medical], middleware: [payloadEncryption({ keys: { k1: K1 }, types: ['enc.missing'] })] });
      const { task } = await client.submit(medical, { patient: 'kept', diagnosis: '-' });
      const envelope = (await env.store.getTask({ id: task.id, scope: G }))!.payload;
      const worker = startWorker([medical], { k2: K2 }, ['enc.missing']);
      const failed = await ended(task.id);
      expect([failed.status, failed.lastErrorCode, failed.attemptCount]).toEqual(['FAILED', 'PAYLOAD_KEY_MISSING', 1]);
      expect(failed.payload).toEqual(envelope);
      expect(seen).toEqual([]);
      await worker.stop();
      startWorker([medical], { k1: K1 }, ['enc.missing']);
      await client.retry(task.id);
      expect((await ended(task.id)).status).toBe('SUCCESS');
      expect(seen).toEqual(['kept']);
    });

    it('a different key under the same id fails with PAYLOAD_DECRYPT_FAILED; an envelope copied onto another type does not open', async () => {
      const a = defineTask<Record_>({ type: 'enc.a', maxAttempts: 3, execute: async () => undefined });
      const client = createClient({ store: env.store, tasks: [a], middleware: [payloadEncryption({ keys: { k1: K1 }, types: ['enc.a'] })] });
      const { task } = await client.submit(a, { patient: 'p', diagnosis: '-' });
      startWorker([a], { k1: K2 }, ['enc.a']);
      const failed = await ended(task.id);
      expect([failed.status, failed.lastErrorCode, failed.attemptCount]).toEqual(['FAILED', 'PAYLOAD_DECRYPT_FAILED', 1]);
      // The additional data binds an envelope to its type and kind.
      const encryption = payloadEncryption({ keys: { k1: K1 }, types: ['enc.a', 'enc.b'] });
      const sealed = encryption.encode!({ kind: 'payload', taskType: 'enc.a', value: { x: 1 } });
      expect(encryption.decode!({ kind: 'payload', taskType: 'enc.a', value: sealed })).toEqual({ x: 1 });
      expect(() => encryption.decode!({ kind: 'payload', taskType: 'enc.b', value: sealed })).toThrow(
        expect.objectContaining({ code: 'PAYLOAD_DECRYPT_FAILED' }),
      );
      expect(() => encryption.decode!({ kind: 'result', taskType: 'enc.a', value: sealed })).toThrow(
        expect.objectContaining({ code: 'PAYLOAD_DECRYPT_FAILED' }),
      );
    });

    it("seals a handler's fan-out children and a publish's tasks, and opens a child's result for its parent", async () => {
      const types = ['enc.child', 'enc.listener'];
      const childResults: unknown[] = [];
      const child = defineTask<{ part: string }>({ type: 'enc.child', execute: async (_ctx, p) => TaskResult.success({ result: { echoed: p.part } }) });
      const parent = defineTask<{ parts: string[] }>({
        type: 'enc.parent',
        execute: async (ctx, p) => {
          const children = await ctx.children();
          if (children.length === 0) return TaskResult.awaitChildren(p.parts.map((part) => ({ type: 'enc.child', payload: { part } })));
          childResults.push(...children.map((c) => c.result));
          return undefined;
        },
      });
      const listener = defineTask<{ part: string }>({ type: 'enc.listener', execute: async () => undefined });
      const all = [child, parent, listener];
      const client = createClient({ store: env.store, tasks: all, middleware: [payloadEncryption({ keys: { k1: K1 }, types })] });
      await client.subscribe({ event: 'record.imported', taskType: 'enc.listener' });
      const published = await client.publish('record.imported', { part: 'secret-event' });
      expect(isEncrypted((await env.store.getTask({ id: published.results[0]!.task.id, scope: G }))!.payload)).toBe(true);
      const { task } = await client.submit(parent, { parts: ['secret-1', 'secret-2'] });
      startWorker(all, { k1: K1 }, types);
      expect((await ended(task.id)).status).toBe('SUCCESS');
      const page = await env.store.listTasks({ scope: G, taskType: 'enc.child', limit: 10 });
      expect(page.tasks).toHaveLength(2);
      for (const c of page.tasks) {
        expect(isEncrypted(c.payload)).toBe(true);
        expect(JSON.stringify(c)).not.toContain('secret');
      }
      expect(childResults.sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)))).toEqual([{ echoed: 'secret-1' }, { echoed: 'secret-2' }]);
    });
  });
}

/**
 * Option typos that TypeScript catches but plain JavaScript does not must fail
 * loudly, with a did-you-mean, on every store: the store's own constructor,
 * submit and submitMany, defineTask and the Worker (with their nested retry).
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';

/** The store constructor called with one misspelt key, and the message that must name it. */
export interface StoreTypo {
  construct: () => unknown;
  field: string;
  message: string;
}

const echo = defineTask({ type: 'echo', execute: () => undefined });

/** The thrown error, for asserting on its code, field and message together. */
async function caught(action: () => unknown): Promise<{ code?: string; field?: string; message?: string }> {
  try {
    await action();
  } catch (error) {
    return error as { code?: string; field?: string; message?: string };
  }
  throw new Error('expected an error, none was thrown');
}

export function runUnknownOptionSuite(factory: StoreFactory, storeTypo: StoreTypo): void {
  describe(`unknown option keys are rejected with a did-you-mean (${factory.dialect})`, () => {
    const context = perTestStore(factory);
    const nothingWritten = async (): Promise<void> => {
      expect((await context.store.listTasks({ scope: Scope.global(), limit: 10 })).tasks).toEqual([]);
    };

    it('by the store constructor', async () => {
      expect(await caught(storeTypo.construct)).toMatchObject({ code: 'INVALID_OPTIONS', field: storeTypo.field, message: storeTypo.message });
    });

    it('by submit and submitMany, which then write nothing', async () => {
      const client = createClient({ store: context.store, tasks: [echo] });
      const options = { idempotency_key: 'k-1' } as unknown as { idempotencyKey: string };
      expect(await caught(() => client.submit(echo, {}, options))).toMatchObject({
        code: 'INVALID_OPTIONS',
        field: 'idempotency_key',
        message: expect.stringMatching(/^submit option "idempotency_key" is unknown: did you mean "idempotencyKey"\? \(known: type, payload, /),
      });
      const requests = [
        { type: 'echo', payload: {} },
        { type: 'echo', payload: {}, delay: 5 },
      ];
      expect(await caught(() => client.submitMany(requests))).toMatchObject({
        code: 'INVALID_OPTIONS',
        message: expect.stringMatching(/^submitMany task #1 option "delay" is unknown: did you mean "delayMs"\?/),
      });
      expect(await caught(() => client.submitMany([{ type: 'echo', payload: {} }], { trx: null } as object))).toMatchObject({
        code: 'INVALID_OPTIONS',
        message: 'submitMany option "trx" is unknown (known: transaction)',
      });
      await nothingWritten();
    });

    it('by defineTask and its nested retry', () => {
      expect(() => defineTask({ type: 'late', timeout: 5, execute: () => undefined } as object as Parameters<typeof defineTask>[0])).toThrowError(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          field: 'timeout',
          message: expect.stringMatching(/^defineTask\(late\) option "timeout" is unknown: did you mean "timeoutMs"\?/),
        }),
      );
      const retry = { baseDelay: 10 } as object;
      expect(() => defineTask({ type: 'late', retry, execute: () => undefined })).toThrowError(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          field: 'retry.baseDelay',
          message:
            'defineTask(late) option "retry.baseDelay" is unknown: did you mean "retry.baseDelayMs"? (known: retry.baseDelayMs, retry.multiplier, retry.maxDelayMs, retry.jitter)',
        }),
      );
    });

    it('by the Worker and its nested retry', () => {
      const options = { store: context.store, tasks: [echo], concurency: 2 } as object as Parameters<typeof createWorker>[0];
      expect(() => createWorker(options)).toThrowError(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          field: 'concurency',
          message: expect.stringMatching(/^Worker option "concurency" is unknown: did you mean "concurrency"\?/),
        }),
      );
      const retry = { max_delay_ms: 10 } as object;
      expect(() => createWorker({ store: context.store, tasks: [echo], retry })).toThrowError(
        expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'retry.max_delay_ms', message: expect.stringMatching(/did you mean "retry.maxDelayMs"\?/) }),
      );
    });
  });
}

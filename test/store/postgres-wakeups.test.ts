/**
 * Wake-ups of submits made in the store's own transactions: sent after the
 * commit (so a woken worker finds the rows), naming every type submitted, and
 * coalesced — a flood of concurrent submits is announced in far fewer
 * NOTIFYs than submits, since each transaction that NOTIFYs commits alone.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { StoreEvent } from '../../src/store/types.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-wakeups.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: wake-ups of submits', () => {
  let schema: TestSchema;
  let producer: PostgresStore;
  let listener: PostgresStore;

  beforeAll(async () => {
    schema = await createTestSchema();
    producer = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 3 });
    await producer.migrate();
    // Another store on the schema stands for a worker in another process: it hears only NOTIFYs.
    listener = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 });
  });
  afterAll(async () => {
    await producer?.close();
    await listener?.close();
    await schema?.drop();
  });

  async function listen(): Promise<{ events: StoreEvent[]; off: () => void }> {
    const events: StoreEvent[] = [];
    const off = listener.subscribe((event) => events.push(event));
    await waitFor(() => listener.wakeups === 'listening', 'the listener to hear its own probe');
    return { events, off };
  }
  const named = (events: StoreEvent[], type: string): boolean => events.some((e) => e.kind === 'submitted' && e.taskTypes.includes(type));

  it('a submit is announced after its commit: the woken worker finds the task', async () => {
    const { events, off } = await listen();
    let claimedOnWake: Promise<unknown[]> | null = null;
    const offClaim = listener.subscribe((event) => {
      if (event.kind === 'submitted' && event.taskTypes.includes('woken')) claimedOnWake ??= listener.claimTasks(claimParams({ taskTypes: ['woken'] }));
    });
    try {
      await producer.insertTasks({ tasks: [newTask({ taskType: 'woken' })] });
      await waitFor(() => named(events, 'woken'), 'the wake-up naming the type');
      expect(await claimedOnWake).toHaveLength(1);
    } finally {
      offClaim();
      off();
    }
  });

  it('concurrent submits are announced in a few NOTIFYs that name every type', async () => {
    const { events, off } = await listen();
    try {
      events.length = 0;
      const types = Array.from({ length: 40 }, (_, i) => `flood-${i}`);
      await Promise.all(types.map((taskType) => producer.insertTasks({ tasks: [newTask({ taskType })] })));
      await waitFor(() => types.every((type) => named(events, type)), 'every type announced');
      const submitted = events.filter((e) => e.kind === 'submitted' && e.taskTypes.some((t) => t.startsWith('flood-')));
      expect(submitted.length).toBeLessThanOrEqual(types.length / 2);
    } finally {
      off();
    }
  });
});

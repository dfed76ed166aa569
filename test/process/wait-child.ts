/** A waiting process for the waitFor process test: waits for one task and prints the task it resolved with. */
import { createClient } from '../../src/client/client.js';
import { openAnyChildStore, type AnyChildStore } from './line-child-store.js';
import { readyThenGo } from './line-child.js';

export interface WaitChildConfig {
  label: string;
  store: AnyChildStore;
  taskId: string;
}

const config = JSON.parse(process.env.TL_CHILD!) as WaitChildConfig;
const store = await openAnyChildStore(config.store, config.label);
const client = createClient({ store, tasks: [] });
await store.now();
const waiting = client.waitFor(config.taskId, { timeoutMs: 60_000, minPollMs: 5, maxPollMs: 100 });
await readyThenGo();
const task = await waiting;
process.stdout.write(`${JSON.stringify({ id: task.id, status: task.status, result: task.result })}\n`);
await store.close();

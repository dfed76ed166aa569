/**
 * A submitting process for the multi-process uniqueness test: opens its own
 * store, says "ready", waits for "go" on stdin (so that every process submits
 * at the same moment), submits `perMode` concurrent tasks with one key per
 * mode, prints each answer as a JSON line and exits.
 */
import { createInterface } from 'node:readline';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import type { UniqueOptions } from '../../src/client/unique.js';
import type { Store } from '../../src/store/types.js';
import { openChildStore, type ChildStoreConfig } from './child-store.js';

export interface UniqueChildConfig {
  label: string;
  store: ChildStoreConfig | { dialect: 'sqlite'; path: string };
  perMode: number;
  modes: Record<string, UniqueOptions>;
}

const config = JSON.parse(process.env.TL_CHILD!) as UniqueChildConfig;
const job = defineTask<{ from: string; i: number }>({ type: 'unique.process' });

async function open(): Promise<Store> {
  if (config.store.dialect !== 'sqlite') return openChildStore(config.store, config.label);
  const { SqliteStore } = await import('../../src/store/sqlite/store.js');
  return new SqliteStore({ path: config.store.path });
}

const store = await open();
const client = createClient({ store, tasks: [job] });
await store.now();
process.stdout.write(`${JSON.stringify({ event: 'ready' })}\n`);
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
const submits = Object.entries(config.modes).flatMap(([mode, unique]) =>
  Array.from({ length: config.perMode }, (_, i) =>
    client.submit(job, { from: config.label, i }, { unique }).then((r) => ({ event: 'submitted', mode, id: r.task.id, created: r.created })),
  ),
);
for (const answer of await Promise.all(submits)) process.stdout.write(`${JSON.stringify(answer)}\n`);
await store.close();

/**
 * A submitting process for the multi-process uniqueness test: opens its own
 * store, says "ready", waits for "go" on stdin (so that every process submits
 * at the same moment), submits `perMode` concurrent tasks with one key per
 * mode, prints each answer as a JSON line and exits.
 */
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import type { UniqueOptions } from '../../src/client/unique.js';
import { openAnyChildStore, type AnyChildStore } from './line-child-store.js';
import { readyThenGo } from './line-child.js';

export interface UniqueChildConfig {
  label: string;
  store: AnyChildStore;
  perMode: number;
  modes: Record<string, UniqueOptions>;
}

const config = JSON.parse(process.env.TL_CHILD!) as UniqueChildConfig;
const job = defineTask<{ from: string; i: number }>({ type: 'unique.process' });

const store = await openAnyChildStore(config.store, config.label);
const client = createClient({ store, tasks: [job] });
await store.now();
await readyThenGo();
const submits = Object.entries(config.modes).flatMap(([mode, unique]) =>
  Array.from({ length: config.perMode }, (_, i) =>
    client.submit(job, { from: config.label, i }, { unique }).then((r) => ({ event: 'submitted', mode, id: r.task.id, created: r.created })),
  ),
);
for (const answer of await Promise.all(submits)) process.stdout.write(`${JSON.stringify(answer)}\n`);
await store.close();

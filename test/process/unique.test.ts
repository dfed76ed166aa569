/**
 * Uniqueness under concurrent submits from several OS processes, each with
 * its own store and connections, released at the same moment: exactly one
 * task per key for each mode (by state, throttle, debounce), on every store.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Store } from '../../src/store/types.js';
import { onEveryStore } from './areas.js';
import { spawnLineChild } from './line-child.js';
import type { AnyChildStore } from './line-child-store.js';
import type { UniqueChildConfig } from './unique-child.js';

const PROCESSES = 4;
const PER_MODE = 10;
const MODES = { state: { key: 'k' }, throttle: { key: 'k', periodMs: 3_600_000 }, debounce: { key: 'k', debounceMs: 3_600_000 } };

interface Answer {
  mode: string;
  id: string;
  created: boolean;
}

/** Starts the children, waits until each has its store open, releases them together, and collects every answer. */
async function submitFromProcesses(store: AnyChildStore): Promise<Answer[]> {
  const children = Array.from({ length: PROCESSES }, (_, i) => {
    const config: UniqueChildConfig = { label: `u${i}`, store, perMode: PER_MODE, modes: MODES };
    return spawnLineChild<Answer>(join(import.meta.dirname, 'unique-child.ts'), config);
  });
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.go();
  return (await Promise.all(children.map((c) => c.exited))).flat();
}

async function expectOnePerMode(store: Store, answers: Answer[]): Promise<void> {
  expect(answers).toHaveLength(PROCESSES * PER_MODE * Object.keys(MODES).length);
  for (const mode of Object.keys(MODES)) {
    const ofMode = answers.filter((a) => a.mode === mode);
    expect(
      ofMode.filter((a) => a.created),
      mode,
    ).toHaveLength(1);
    expect(new Set(ofMode.map((a) => a.id)).size, mode).toBe(1);
  }
  const page = await store.listTasks({ scope: Scope.global(), limit: 100 });
  expect(page.tasks).toHaveLength(Object.keys(MODES).length);
}

await onEveryStore('test/process/unique.test.ts', 'uniqueness under submits from several processes', (withArea) => {
  it(`${PROCESSES} processes, one task per mode`, { timeout: 120_000 }, () =>
    withArea(async ({ store, childStore }) => expectOnePerMode(store, await submitFromProcesses(childStore))),
  );
});

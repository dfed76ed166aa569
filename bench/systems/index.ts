/**
 * The systems the bench knows, in run order. Adapters load lazily: a system
 * whose modules fail to load is reported and skipped, the others still run.
 */
import type { SystemAdapter } from '../types.js';

export const systems: Record<string, () => Promise<SystemAdapter>> = {
  'tasklease-postgres': async () => (await import('./tasklease.js')).tasklease('postgres'),
  'tasklease-sqlite': async () => (await import('./tasklease.js')).tasklease('sqlite'),
  'tasklease-mysql': async () => (await import('./tasklease.js')).tasklease('mysql'),
  'graphile-worker': async () => (await import('./graphile-worker.js')).graphileWorker(),
  'pg-boss': async () => (await import('./pg-boss.js')).pgBoss(),
  bullmq: async () => (await import('./bullmq.js')).bullmq(),
};

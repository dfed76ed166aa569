/**
 * `tasklease/testing`: test helpers for handlers. An in-memory SQLite store
 * (needs the better-sqlite3 package, as tasklease/sqlite does), a real worker
 * that runs tasks only when a test asks, and one TestClock for delays,
 * deadlines, schedules and retries. No test framework needed.
 */
export { createTestKit, TestKit } from './kit.js';
export type { TestKitOptions, RunOptions, RunTaskOptions, TaskRun, RanAttempt, DrainOptions } from './types.js';
export { TestClock } from './clock.js';
export type { EnqueuedFilter } from './match.js';

import { restartCases } from './restart-cases.js';

// 100,000 tasks in batches of 1000: the first process is killed once a fifth is saved (about 2–5 s in on a quiet machine).
await restartCases('test/bulk/restart.test.ts', { tasks: 100_000, batch: 1000, pauseMs: 0, timeoutMs: 600_000 });

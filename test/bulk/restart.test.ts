import { restartCases } from './restart-cases.js';

// 3,000 tasks in batches of 100 with a 60 ms pause: the killed process is caught a fifth of the way (npm run test:scale: 100,000).
await restartCases('test/bulk/restart.test.ts', { tasks: 3000, batch: 100, pauseMs: 60, timeoutMs: 120_000 });

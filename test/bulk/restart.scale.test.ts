import { restartCases } from './restart-cases.js';

// npm run test:scale: 100,000 tasks in batches of 1000, no pause.
await restartCases('test/bulk/restart.scale.test.ts', { tasks: 100_000, batch: 1000, pauseMs: 0, timeoutMs: 900_000 });

import { defineConfig } from 'vitest/config';

/**
 * Scale runs (npm run test:scale): the same scenarios as npm test's at
 * production sizes — a bulk operation over 100,000 tasks with its process
 * killed in the middle and resumed by another, on every store. Minutes, not
 * seconds: their figures go in the release notes, not in every test run.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.scale.test.ts'],
    testTimeout: 900_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 1,
    reporters: ['default'],
  },
});

import { defineConfig } from 'vitest/config';

/**
 * Multi-process samplers (npm run test:samplers): worker processes against
 * one database on every store, checking a guarantee over every start — rate
 * limits never exceeded in any window, sequences one at a time in submit
 * order and fair. Too long for `npm test` on two cores (about 80 s); the
 * per-store suites there check the same rules in one process.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.sampler.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
    reporters: ['default'],
  },
});

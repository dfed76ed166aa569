import { defineConfig } from 'vitest/config';

/**
 * The whole fault suite (npm run test:faults): every case of test/faults/,
 * fast and slow, each file against its own PostgreSQL cluster. One file at a
 * time: the cases freeze and crash servers and time leases, and two clusters
 * under load at once on a 2-core machine only blur the timings.
 * PENDING=1: the cases of test/faults/pending/ instead, which fail until the
 * fix each names (`PENDING=1 npx vitest run --config vitest.faults.config.ts test/faults/pending/<file>`).
 */
export default defineConfig({
  test: {
    include: [process.env.PENDING === '1' ? 'test/faults/pending/*.test.ts' : 'test/faults/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
    reporters: ['default'],
  },
});

import { configDefaults, defineConfig } from 'vitest/config';

/** Fast fault files that run only under vitest.faults.config.ts (npm run test:faults): see `exclude` below. */
const FAULTS_ELSEWHERE = [
  'workers-mysql',
  'workers-sqlite',
  'database-mysql',
  'lease-keeping-mysql',
  'sandbox-mysql',
  'sandbox-sqlite',
  'flows-mysql',
  'steps-mysql',
  'enqueue-mysql',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The package (dist/src, and dist/ui the server serves the dashboard from) is built first when stale; nothing builds during the run.
    globalSetup: ['test/ui/build-ui.ts'],
    // The fault suite's slow cases run under vitest.faults.config.ts (npm run test:faults); its fast subset
    // (test/faults/*.fast.test.ts) runs here. test/faults/pending/ is where a case waits for the fix it names (PENDING=1 with vitest.faults.config.ts runs one).
    // Multi-process samplers run under vitest.samplers.config.ts (npm run test:samplers).
    // The fast fault cases that start worker processes and servers run here on PostgreSQL (the production store);
    // their MySQL and SQLite runs (the same cases: test/faults/*-cases.ts) only under test:faults — together about
    // 400 s of file time, which kept npm test near its 20-minute budget on two loaded cores.
    exclude: [
      ...configDefaults.exclude,
      'test/faults/**/*.slow.test.ts',
      'test/faults/pending/**',
      'test/**/*.sampler.test.ts',
      ...FAULTS_ELSEWHERE.map((name) => `test/faults/${name}.fast.test.ts`),
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more parallel files only make the multi-process tests slower.
    maxWorkers: 2,
    reporters: ['default'],
  },
});

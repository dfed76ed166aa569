import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The server serves the dashboard from dist/ui: built first when stale.
    globalSetup: ['test/ui/build-ui.ts'],
    // The fault suite's slow cases run under vitest.faults.config.ts (npm run test:faults); its fast subset
    // (test/faults/*.fast.test.ts) runs here. test/faults/pending/ is where a case waits for the fix it names (PENDING=1 with vitest.faults.config.ts runs one).
    // Multi-process samplers run under vitest.samplers.config.ts (npm run test:samplers).
    exclude: [...configDefaults.exclude, 'test/faults/**/*.slow.test.ts', 'test/faults/pending/**', 'test/**/*.sampler.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more parallel files only make the multi-process tests slower.
    maxWorkers: 2,
    reporters: ['default'],
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The server serves the dashboard from dist/ui: built first when stale.
    globalSetup: ['test/ui/build-ui.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more parallel files only make the multi-process tests slower.
    maxWorkers: 2,
    reporters: ['default'],
  },
});

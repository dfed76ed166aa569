import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more parallel files only make the multi-process tests slower.
    maxWorkers: 2,
    reporters: ['default'],
  },
});

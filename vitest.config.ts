import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{shared,storage-element,core,edge,deploy,test}/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/leak-check.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});

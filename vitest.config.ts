import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{shared,storage-element,core,edge,deploy,test}/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/leak-check.ts'],
    // Guards against hangs, not speed requirements: the suite must pass on a loaded 2-core host.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});

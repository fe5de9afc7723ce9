import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{shared,storage-element,core,edge,deploy,test}/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/leak-check.ts'],
    // Guards against hangs, not speed requirements: the suite must pass on a loaded 2-core host
    // (a 10 s test took over 3 minutes at load 37). waitFor gives up first (120 s), naming what hung.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});

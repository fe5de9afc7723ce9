import { ManualClock, MemoryTtlStore } from '../../src/leadership/index.ts';
import { describeTtlStoreConformance } from './conformance.ts';

describeTtlStoreConformance({
  name: 'memory (manual clock)',
  leaseMs: 3_000,
  async create() {
    const clock = new ManualClock(1_000_000);
    return {
      store: new MemoryTtlStore({ clock }),
      clock,
      pass: (ms) => clock.advance(ms),
      async teardown() {},
    };
  },
});

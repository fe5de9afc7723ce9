import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { serviceUrl } from '../../../test/support/service-env.ts';
import { PostgresTtlStore, systemClock } from '../../src/leadership/index.ts';
import { describeTtlStoreConformance } from './conformance.ts';

describeTtlStoreConformance({
  name: 'postgres',
  leaseMs: 600,
  async create() {
    const databaseUrl = serviceUrl('DATABASE_URL');
    const table = `ttl_conformance_${randomBytes(6).toString('hex')}`;
    const pools = [new pg.Pool({ connectionString: databaseUrl, max: 4 })];
    const first = pools[0] as pg.Pool;
    return {
      store: new PostgresTtlStore(first, { table }),
      clock: systemClock,
      pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      async reopen() {
        const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
        pools.push(pool);
        return new PostgresTtlStore(pool, { table });
      },
      async teardown() {
        await first.query(`DROP TABLE IF EXISTS "${table}"`);
        await Promise.all(pools.map((p) => p.end()));
      },
    };
  },
});

/**
 * The ingest tests' shared world (support/world.ts) stops everything it
 * started: on close(), and when a part fails to start. The leak check
 * (test/support/leak-check.ts) fails this file if an SE process or a
 * connection outlives it.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTestSchema } from '../../../test/support/index.ts';
import { startIngestWorld } from './support/world.ts';

/** How many PostgreSQL schemas have a name starting with `start`. */
async function schemasNamed(start: string): Promise<number> {
  const probe = await createTestSchema('world_probe');
  try {
    const { rows } = await probe.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name LIKE $1',
      [`${start}%`],
    );
    return rows[0]?.n ?? -1;
  } finally {
    await probe.close();
  }
}

describe('startIngestWorld', () => {
  it('starts the SEs and an ingest that sees them writable; close() stops the SEs, removes their data and drops the schema, once', async () => {
    const world = await startIngestWorld({
      name: 'ingest_world_ok',
      ses: [
        { id: 'se-w1', location: 'dc1' },
        { id: 'se-w2', location: 'dc2' },
      ],
    });
    expect((await world.ingest.monitor.status()).writable_storage_elements).toBe(2);
    expect(Object.keys(world.ses).sort()).toEqual(['se-w1', 'se-w2']);
    expect((await world.schema.pool.query('SELECT count(*)::int AS n FROM files')).rows[0].n).toBe(0);
    const schema = world.schema.schema;
    await Promise.all([world.close(), world.close()]);
    await world.close();
    expect(await Promise.all(Object.values(world.ses).map((se) => se.exited))).toHaveLength(2);
    for (const se of Object.values(world.ses)) expect(existsSync(se.dataDir)).toBe(false);
    expect(await schemasNamed(schema)).toBe(0);
  });

  it('an SE that cannot start: the other SE is stopped, the schema dropped, and the error thrown', async () => {
    // Counted before: a schema left by an earlier, killed run does not count against this one.
    const before = await schemasNamed('ingest_world_fail');
    const started = startIngestWorld({
      name: 'ingest_world_fail',
      ses: [
        { id: 'se-good', location: 'dc1' },
        { id: 'se-bad', location: 'dc1', env: { STORAGE_PORT: 'not-a-port' } },
      ],
    });
    await expect(started).rejects.toThrow(/SE exited/);
    expect(await schemasNamed('ingest_world_fail')).toBe(before);
  });
});

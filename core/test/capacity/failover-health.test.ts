import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDataDir, type SeProcess, startSe, TOKEN } from '../../../storage-element/test/support/se-process.ts';
import { createTestRedis, type TestRedis, uniqueName, waitFor } from '../../../test/support/index.ts';
import { CapacityCache, type StorageElementConfig, selectStorage } from '../../src/capacity/index.ts';
import { createMonitor, metricValue, type TestMonitor } from './support/monitors.ts';

/**
 * A dead storage element stays unhealthy across a capacity-monitor leader
 * change: the new leader starts from the cached health, not from "every SE
 * healthy", so ingest never sees the dead SE as a candidate in between.
 * Real Redis (REDIS_URL), real storage-element processes.
 */
describe('capacity monitor failover with a dead storage element', () => {
  let redis: TestRedis;
  let live: SeProcess;
  let victim: SeProcess;
  let config: StorageElementConfig[];
  const open: TestMonitor[] = [];

  beforeAll(async () => {
    redis = await createTestRedis('capfailhealth');
    [live, victim] = await Promise.all([
      startSe({ STORAGE_ELEMENT_ID: 'se-live', STORAGE_DATACENTER_LOCATION: 'dc1' }),
      startSe({ STORAGE_ELEMENT_ID: 'se-victim', STORAGE_DATACENTER_LOCATION: 'dc2' }),
    ]);
    config = [
      { storage_id: 'se-live', endpoint: live.url, token: TOKEN, location: 'dc1' },
      { storage_id: 'se-victim', endpoint: victim.url, token: TOKEN, location: 'dc2' },
    ];
  });

  afterAll(async () => {
    await Promise.all(open.splice(0).map((m) => m.close()));
    for (const se of [live, victim]) {
      await se?.stop();
      if (se) await removeDataDir(se.dataDir);
    }
    await redis?.close();
  });

  it('the dead SE is never cached healthy nor selectable while the leader changes', async () => {
    const prefix = `${redis.prefix}${uniqueName('t')}:`;
    const cache = new CapacityCache(redis.client, prefix);
    const a = await createMonitor('ingest-a', prefix, config);
    open.push(a);
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    const b = await createMonitor('ingest-b', prefix, config);
    open.push(b);
    b.monitor.start();
    await waitFor(async () => (await cache.readMany(['se-live', 'se-victim'])).size === 2, { timeoutMs: 5_000 });
    expect(await cache.readHealth('se-victim')).toBe('healthy');

    await victim.kill9();
    await waitFor(
      async () =>
        (await cache.readMany(['se-victim'])).get('se-victim')?.reachable === false &&
        (await cache.readHealth('se-victim'))?.startsWith('unhealthy'),
      { timeoutMs: 10_000, message: 'leader A marks the dead SE unhealthy' },
    );
    const termA = a.monitor.term as number;

    // Sample what ingest would see, every 10 ms, throughout the failover.
    const samples: Array<{ health: string | null; reachable: boolean | undefined; term: number | undefined }> = [];
    const selectable: string[][] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [health, entries, candidates] = await Promise.all([
          cache.readHealth('se-victim'),
          cache.readMany(['se-victim']),
          b.monitor.candidates(),
        ]);
        const entry = entries.get('se-victim');
        samples.push({ health, reachable: entry?.reachable, term: entry?.term });
        selectable.push(selectStorage(candidates, { sizeBytes: 1 }).eligible.map((c) => c.storage_id));
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    // Leader A dies (its Redis connection is cut: it can neither renew nor write).
    a.redis.disconnect();
    // Meanwhile a follower refreshes the dead SE lazily (as after a failed placement).
    await b.monitor.triggerLazyUpdate('se-victim', 'manual');
    await waitFor(() => b.monitor.isLeader, { timeoutMs: 8_000, message: 'B leads' });
    const termB = b.monitor.term as number;
    expect(termB).toBeGreaterThan(termA);
    // B has polled both SEs: the live one carries B's term, the dead one too (its failures were written).
    await waitFor(
      async () => {
        const entries = await cache.readMany(['se-live', 'se-victim']);
        return entries.get('se-live')?.term === termB && entries.get('se-victim')?.term === termB;
      },
      { timeoutMs: 5_000, message: "B's first writes" },
    );
    // Several more polls under B (counted, not slept for), sampled all along.
    const pollsAtB = await metricValue(b.registry, 'capacity_poll_duration_seconds', {}, '_count');
    await waitFor(
      async () =>
        samples.length > 50 &&
        (await metricValue(b.registry, 'capacity_poll_duration_seconds', {}, '_count')) >= pollsAtB + 4,
      { message: 'several more polls under B' },
    );
    sampling = false;
    await sampler;

    expect(samples.length).toBeGreaterThan(50);
    expect(samples.some((s) => s.term === termB)).toBe(true);
    const healthy = samples.filter((s) => !s.health?.startsWith('unhealthy') || s.reachable !== false);
    expect(healthy).toEqual([]);
    expect(selectable.filter((ids) => ids.includes('se-victim'))).toEqual([]);
    // The live SE stayed selectable throughout the failover.
    expect(selectable.every((ids) => ids.includes('se-live'))).toBe(true);
  });
});

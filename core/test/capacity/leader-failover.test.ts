import { Elections, RedisTtlStore, silentLogger } from '@polyvision/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestRedis, type TestRedis, uniqueName, waitFor } from '../../../test/support/index.ts';
import type { CapacityMonitorSettings, StorageElementConfig } from '../../src/capacity/index.ts';
import { runLeaderTerm } from '../../src/capacity/leader-term.ts';
import { type FakeSe, startFakeSe } from './support/fake-se.ts';
import { createMonitor, metricValue, type TestMonitor } from './support/monitors.ts';

/**
 * Seed capacity-management-migration-plan.md, "Leader Election Failover"
 * integration tests, on the real Redis at REDIS_URL.
 */
let redis: TestRedis;
let ses: FakeSe[];
let config: StorageElementConfig[];
const open: TestMonitor[] = [];
let prefix: string;

async function monitor(id: string, settings: Partial<CapacityMonitorSettings> = {}): Promise<TestMonitor> {
  const m = await createMonitor(id, prefix, config, settings);
  open.push(m);
  return m;
}

const leaders = () => open.filter((m) => m.monitor.isLeader);

beforeAll(async () => {
  redis = await createTestRedis('capfail');
  ses = await Promise.all([startFakeSe('se-1'), startFakeSe('se-2', 'dc2')]);
  config = ses.map((se) => ({ storage_id: se.id, endpoint: se.url, token: 't', location: 'dc1' }));
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
  prefix = `${redis.prefix}${uniqueName('t')}:`;
});

afterAll(async () => {
  await Promise.all(ses.map((se) => se.close()));
  await redis.close();
});

prefix = '';

describe('leader election failover', () => {
  it('a single instance becomes leader, with the seed key and its instance id as value', async () => {
    prefix = `${redis.prefix}single:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    expect(await redis.client.get(`${prefix}capacity_monitor:leader_lock`)).toBe('ingest-a');
    expect(await metricValue(a.registry, 'capacity_monitor_leader_state', { instance_id: 'ingest-a' })).toBe(1);
    expect(
      await metricValue(a.registry, 'capacity_monitor_leader_transitions_total', { transition_type: 'acquired' }),
    ).toBe(1);
    expect(
      await metricValue(a.registry, 'leader_lock_acquisition_duration_seconds', { result: 'acquired' }, '_count'),
    ).toBe(1);
  });

  it('a second instance becomes follower and reports the leader', async () => {
    prefix = `${redis.prefix}second:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    const b = await monitor('ingest-b');
    b.monitor.start();
    await waitFor(async () => (await b.monitor.status()).leader_id === 'ingest-a', { timeoutMs: 5_000 });
    const status = await b.monitor.status();
    expect(status.role).toBe('follower');
    expect(status.leader_term).toBe(a.monitor.term);
    expect(b.monitor.isLeader).toBe(false);
  });

  it('a follower is promoted after the TTL when the leader dies without releasing', async () => {
    prefix = `${redis.prefix}promote:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    const termA = a.monitor.term as number;
    const b = await monitor('ingest-b');
    b.monitor.start();
    // The leader's Redis connection dies: it can neither renew nor release.
    a.redis.disconnect();
    const cutAt = Date.now();
    // A stops at its renew deadline (3/4 lease after its last confirmed renewal), before its record can
    // expire: sampled until B leads, the two never lead at once (an order of events, not a time).
    let bothLed = false;
    await waitFor(
      () => {
        if (a.monitor.isLeader && b.monitor.isLeader) bothLed = true;
        return b.monitor.isLeader;
      },
      { timeoutMs: 30_000, intervalMs: 10, message: 'B leads' },
    );
    const takeoverMs = Date.now() - cutAt;
    expect(bothLed).toBe(false);
    expect(a.monitor.isLeader).toBe(false);
    expect(b.monitor.term).toBeGreaterThan(termA);
    // Not before A's lease could have lapsed (1.5 s TTL); how soon after is measured in bench/leadership.
    expect(takeoverMs).toBeGreaterThan(500);
  });

  it('the leader renews its lock periodically and keeps its term', async () => {
    prefix = `${redis.prefix}renew:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    const term = a.monitor.term;
    // Two renewals (the lease is 1.5 s, so this spans more than one lease), counted, not slept for.
    await waitFor(
      async () =>
        (await metricValue(a.registry, 'capacity_monitor_leader_transitions_total', {
          transition_type: 'renewed',
        })) >= 2,
      { timeoutMs: 30_000, message: 'two renewals' },
    );
    expect(a.monitor.isLeader).toBe(true);
    expect(a.monitor.term).toBe(term);
    const ttlMs = await redis.client.pttl(`${prefix}capacity_monitor:leader_lock`);
    expect(ttlMs).toBeGreaterThan(0);
    expect(ttlMs).toBeLessThanOrEqual(1_500);
    expect(
      await metricValue(a.registry, 'capacity_monitor_leader_transitions_total', { transition_type: 'renewed' }),
    ).toBeGreaterThanOrEqual(2);
  });

  it('a graceful release lets a follower take over at once', async () => {
    prefix = `${redis.prefix}release:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    const b = await monitor('ingest-b');
    b.monitor.start();
    await waitFor(async () => (await b.monitor.status()).leader_id === 'ingest-a', { timeoutMs: 30_000 });
    await a.close();
    // Released, not left to expire: the key is no longer A's at once, so B takes it on its next try (lease/10).
    expect(await redis.client.get(`${prefix}capacity_monitor:leader_lock`)).not.toBe('ingest-a');
    await waitFor(() => b.monitor.isLeader, { timeoutMs: 30_000 });
    expect(b.monitor.isLeader).toBe(true);
  });

  it('rapid leader succession issues strictly increasing terms', async () => {
    prefix = `${redis.prefix}rapid:`;
    const terms: number[] = [];
    for (const id of ['r1', 'r2', 'r3', 'r4']) {
      const m = await monitor(id);
      m.monitor.start();
      await waitFor(() => m.monitor.isLeader, { timeoutMs: 5_000 });
      terms.push(m.monitor.term as number);
      await m.close();
    }
    expect(terms).toEqual([...terms].sort((x, y) => x - y));
    expect(new Set(terms).size).toBe(4);
  });

  it('tolerates a brief Redis hiccup without losing leadership', async () => {
    prefix = `${redis.prefix}hiccup:`;
    // A 15 s lease: the 250 ms hiccup stays far under the renew deadline even on a loaded host.
    const lease = { leaderTtlMs: 15_000, leaderRenewalIntervalMs: 500 };
    const a = await monitor('ingest-a', lease);
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    const term = a.monitor.term;
    const b = await monitor('ingest-b', lease);
    b.monitor.start();
    a.redis.disconnect();
    await new Promise((r) => setTimeout(r, 250)); // the hiccup
    await a.redis.connect();
    // Renewals go through again after it (counted, not slept for).
    const renewed = () =>
      metricValue(a.registry, 'capacity_monitor_leader_transitions_total', { transition_type: 'renewed' });
    const renewedAfter = await renewed();
    await waitFor(async () => (await renewed()) >= renewedAfter + 2, { message: 'two renewals after the hiccup' });
    expect(a.monitor.isLeader).toBe(true);
    expect(a.monitor.term).toBe(term);
    expect(b.monitor.isLeader).toBe(false);
  });

  it('the cache survives a leader change and the new leader overwrites it with its higher term', async () => {
    prefix = `${redis.prefix}cache:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(async () => (await a.cache.readMany(['se-1', 'se-2'])).size === 2, { timeoutMs: 5_000 });
    const termA = a.monitor.term as number;
    const b = await monitor('ingest-b');
    b.monitor.start();
    await a.close();
    // Between the leaders, followers still read A's entries.
    const between = await b.monitor.candidates();
    expect(between.map((c) => c.storage_id).sort()).toEqual(['se-1', 'se-2']);
    expect(between.every((c) => c.term === termA)).toBe(true);
    await waitFor(() => b.monitor.isLeader, { timeoutMs: 5_000 });
    await waitFor(async () => (await b.monitor.candidates()).every((c) => c.term === b.monitor.term), {
      timeoutMs: 5_000,
    });
    // A write from the old term is refused now.
    const entry = (await b.cache.readMany(['se-1'])).get('se-1');
    if (!entry) throw new Error('no entry');
    expect(
      await b.cache.write({ ...entry, term: termA, available: 1 }, 'healthy', {
        cacheTtlMs: 60_000,
        healthTtlMs: 60_000,
      }),
    ).toBe(false);
    expect((await b.cache.readMany(['se-1'])).get('se-1')?.available).not.toBe(1);
  });

  it('a follower lazily updates an SE after a 507: marked full at once, one request for a burst', async () => {
    prefix = `${redis.prefix}lazy:`;
    // A slow leader: base interval long, so only the lazy path can explain a new request.
    const a = await createMonitor('ingest-a', prefix, config, { baseIntervalMs: 60_000, maxIntervalMs: 60_000 });
    const b = await createMonitor('ingest-b', prefix, config, { baseIntervalMs: 60_000, maxIntervalMs: 60_000 });
    const c = await createMonitor('ingest-c', prefix, config, { baseIntervalMs: 60_000, maxIntervalMs: 60_000 });
    open.push(a, b, c);
    a.monitor.start();
    await waitFor(async () => (await a.cache.readMany(['se-1'])).size === 1, { timeoutMs: 5_000 });
    const se1 = ses[0] as FakeSe;
    const before = se1.requests;
    // The SE is now nearly full; the cache does not know yet.
    se1.set({ used: 999_000, available: 1_000, percent_used: 99.9 });
    // Slow answers so the burst overlaps the lazy poll.
    se1.behave((_req, res) => {
      setTimeout(() => {
        se1.behave(undefined);
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            storage_id: 'se-1',
            mode: 'rw',
            total: 1_000_000,
            used: 999_000,
            available: 1_000,
            reserved: 0,
            percent_used: 99.9,
            health: 'healthy',
            backend: 'local',
            location: 'dc1',
            endpoint: 'http://127.0.0.1:1',
            last_update: new Date().toISOString(),
          }),
        );
      }, 200);
    });
    const burst = [b, c, b, c, b, c].map((m) => m.monitor.triggerLazyUpdate('se-1'));
    await new Promise((r) => setTimeout(r, 20));
    const marked = (await b.cache.readMany(['se-1'])).get('se-1');
    expect(marked?.available).toBe(0);
    expect(marked?.full_marked_at).not.toBeNull();
    await Promise.all(burst);
    expect(se1.requests - before).toBe(1);
    const refreshed = (await c.cache.readMany(['se-1'])).get('se-1');
    expect(refreshed?.available).toBe(1_000);
    expect(refreshed?.full_marked_at).toBeNull();
    expect(await metricValue(b.registry, 'lazy_update_triggers_total', { storage_id: 'se-1' })).toBe(3);
    se1.set({ used: 0, available: 1_000_000, percent_used: 0 });
  });

  it('concurrent start yields exactly one leader', async () => {
    prefix = `${redis.prefix}concurrent:`;
    const ms = await Promise.all(['c1', 'c2', 'c3', 'c4', 'c5', 'c6'].map((id) => monitor(id)));
    for (const m of ms) m.monitor.start();
    await waitFor(() => leaders().length === 1, { timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(leaders()).toHaveLength(1);
  });
});

describe('leader term under the LeadershipRunner', () => {
  it('a term whose work ignores the loss is killed after lease/4 (the runner killer)', async () => {
    prefix = `${redis.prefix}${uniqueName('killer')}:`;
    const store = new RedisTtlStore(redis.client, { keyPrefix: prefix });
    const elections = new Elections(store);
    const key = 'capacity_monitor:leader_lock';
    const leadership = (await elections.acquire(key, 'ingest-a', 1_500, { renewIntervalMs: 500 }))!;
    let kills = 0;
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    const term = runLeaderTerm({
      leadership,
      elections,
      store,
      key,
      instanceId: 'ingest-a',
      leaseMs: 1_500,
      watchIntervalMs: 250,
      closing: new AbortController().signal,
      kill: () => {
        kills += 1;
        release(); // in production the process is gone; here the work may end now
      },
      logger: silentLogger,
      onRenewed: () => undefined,
      onSuccessor: () => undefined,
      work: () => stuck, // ignores its signal
    });
    // Another instance holds the lock now (as after a partition).
    await redis.client.set(`${prefix}${key}`, 'ingest-b');
    await waitFor(() => leadership.signal.aborted, { timeoutMs: 5_000, message: 'leadership lost' });
    await waitFor(() => kills === 1, { timeoutMs: 5_000, message: 'killer fired' });
    await term;
    await elections.close();
  });

  it('does not fire the killer when the poll loop stops in time', async () => {
    prefix = `${redis.prefix}${uniqueName('nokill')}:`;
    const a = await monitor('ingest-a');
    a.monitor.start();
    await waitFor(() => a.monitor.isLeader, { timeoutMs: 5_000 });
    await redis.client.set(`${prefix}capacity_monitor:leader_lock`, 'ingest-b');
    await waitFor(() => !a.monitor.isLeader, { timeoutMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // past lease/4 (375 ms)
    expect(a.kills()).toBe(0);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type SeProcess, startSe, TOKEN } from '../../../storage-element/test/support/se-process.ts';
import { createTestRedis, type TestRedis, uniqueName, waitFor } from '../../../test/support/index.ts';
import type { StorageElementConfig } from '../../src/capacity/index.ts';
import { type FakeSe, startFakeSe } from './support/fake-se.ts';
import { createMonitor, metricValue, type TestMonitor } from './support/monitors.ts';

/** Seed "Adaptive Polling" integration tests, plus the bad SE answers of issue 5. */
let redis: TestRedis;
const open: TestMonitor[] = [];
const fakes: FakeSe[] = [];

async function leaderOver(ses: StorageElementConfig[], settings = {}): Promise<TestMonitor> {
  const m = await createMonitor('poller', `${redis.prefix}${uniqueName('p')}:`, ses, settings);
  open.push(m);
  m.monitor.start();
  await waitFor(() => m.monitor.isLeader, { timeoutMs: 5_000 });
  return m;
}

async function fake(id: string, location = 'dc1'): Promise<{ se: FakeSe; config: StorageElementConfig }> {
  const se = await startFakeSe(id, location);
  fakes.push(se);
  return { se, config: { storage_id: id, endpoint: se.url, token: 't', location } };
}

const entry = async (m: TestMonitor, id: string) => (await m.cache.readMany([id])).get(id);

beforeAll(async () => {
  redis = await createTestRedis('cappoll');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});
afterAll(async () => {
  await redis.close();
});

describe('adaptive polling by the leader', () => {
  it('polls every SE, writes capacity:{se_id} and health:{se_id} with TTLs and the term; followers read them', async () => {
    const a = await fake('se-a');
    const b = await fake('se-b', 'dc2');
    const startedAtMs = Date.now();
    const m = await leaderOver([a.config, b.config], { cacheTtlMs: 60_000, healthTtlMs: 30_000 });
    await waitFor(async () => (await m.cache.readMany(['se-a', 'se-b'])).size === 2, { timeoutMs: 5_000 });
    const e = await entry(m, 'se-b');
    expect(e).toMatchObject({
      storage_id: 'se-b',
      mode: 'rw',
      available: 1_000_000,
      location: 'dc2',
      term: m.monitor.term,
    });
    expect(Date.parse(e?.last_poll ?? '')).toBeGreaterThanOrEqual(startedAtMs - 1); // ISO strings keep whole ms
    expect(await m.cache.readHealth('se-a')).toBe('healthy');
    const prefix = (m.cache.capacityKey('se-a') as string).replace('capacity:se-a', '');
    expect(await redis.client.pttl(`${prefix}capacity:se-a`)).toBeGreaterThan(50_000);
    expect(await redis.client.pttl(`${prefix}health:se-a`)).toBeLessThanOrEqual(30_000);
    const follower = await createMonitor('reader', prefix, [a.config, b.config]);
    open.push(follower);
    follower.monitor.start();
    const candidates = await follower.monitor.candidates();
    expect(candidates.map((c) => c.storage_id)).toEqual(['se-a', 'se-b']);
    expect(await metricValue(follower.registry, 'capacity_cache_hits_total', { result: 'hit' })).toBe(2);
    // The follower never polls: the leader's count alone explains the requests.
    expect(await metricValue(follower.registry, 'capacity_poll_duration_seconds', {}, '_count')).toBe(0);
  });

  it('uses If-None-Match against a real SE: an unchanged SE costs a 304', async () => {
    const se: SeProcess = await startSe({ STORAGE_ELEMENT_ID: 'se-real' });
    try {
      const m = await leaderOver([{ storage_id: 'se-real', endpoint: se.url, token: TOKEN, location: 'dc-test' }]);
      await waitFor(
        async () =>
          (await metricValue(m.registry, 'capacity_poll_duration_seconds', { status: 'not_modified' }, '_count')) >= 2,
        { timeoutMs: 8_000 },
      );
      expect(
        await metricValue(m.registry, 'capacity_poll_duration_seconds', { status: 'ok' }, '_count'),
      ).toBeGreaterThanOrEqual(1);
      expect((await entry(m, 'se-real'))?.storage_id).toBe('se-real');
    } finally {
      await se.stop();
    }
  });

  it('counts failures, grows the interval, turns unhealthy after the threshold and recovers after successes', async () => {
    const a = await fake('se-flaky');
    const m = await leaderOver([a.config], { failureThreshold: 3, recoveryThreshold: 2 });
    await waitFor(async () => (await entry(m, 'se-flaky'))?.reachable === true, { timeoutMs: 5_000 });
    a.se.behave((_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"code":"busy"}'));
    const start = a.se.requests;
    await waitFor(async () => (await entry(m, 'se-flaky'))?.reachable === false, { timeoutMs: 8_000 });
    expect(a.se.requests - start).toBe(3);
    expect(await m.cache.readHealth('se-flaky')).toMatch(/^unhealthy: http_5xx/);
    expect(
      await metricValue(m.registry, 'capacity_poll_failures_total', { storage_id: 'se-flaky', error_type: 'http_5xx' }),
    ).toBe(3);
    expect((await m.monitor.status()).writable_storage_elements).toBe(0);
    // Backoff: 3 failures in a storm took base×(2+4) = 1.2 s at least, not 3 × base.
    a.se.behave(undefined);
    await waitFor(async () => (await entry(m, 'se-flaky'))?.reachable === true, { timeoutMs: 8_000 });
    expect(await m.cache.readHealth('se-flaky')).toBe('healthy');
    expect((await m.monitor.status()).writable_storage_elements).toBe(1);
  });

  it('polls many SEs in parallel under the concurrency cap', async () => {
    const many = await Promise.all(Array.from({ length: 12 }, (_, i) => fake(`se-${i}`)));
    // Each SE answers its first poll after 300 ms: the concurrency the SEs see, not a wall-clock
    // time, shows that the polls ran in parallel and under the cap.
    let inFlight = 0;
    let maxInFlight = 0;
    for (const f of many) {
      f.se.behave((req, res) => {
        f.se.behave(undefined);
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        setTimeout(() => {
          inFlight--;
          res.writeHead(503).end();
        }, 300);
        void req;
      });
    }
    const m = await leaderOver(
      many.map((f) => f.config),
      { pollConcurrency: 6, failureThreshold: 5 },
    );
    await waitFor(async () => (await metricValue(m.registry, 'capacity_poll_failures_total')) === 12, {
      timeoutMs: 30_000,
    });
    expect(maxInFlight).toBeGreaterThan(1);
    expect(maxInFlight).toBeLessThanOrEqual(6);
    await waitFor(async () => (await m.cache.readMany(many.map((f) => f.config.storage_id))).size === 12, {
      timeoutMs: 5_000,
    });
  });

  it('treats a hung socket as a timeout', async () => {
    const a = await fake('se-hung');
    a.se.behave(() => undefined); // never answers
    const m = await leaderOver([a.config], { httpTimeoutMs: 200, failureThreshold: 2 });
    // Wait for the health key itself: the monitor counts the failure before it writes the key.
    const health = await waitFor(async () => (await m.cache.readHealth('se-hung')) ?? undefined, {
      timeoutMs: 30_000,
      message: 'health:se-hung written',
    });
    expect(health).toMatch(/^unhealthy: timeout/);
    expect(
      await metricValue(m.registry, 'capacity_poll_failures_total', { error_type: 'timeout' }),
    ).toBeGreaterThanOrEqual(2);
    expect(await entry(m, 'se-hung')).toBeUndefined();
  });

  it('retries a failed poll with backoff (HTTP_RETRIES, RETRY_BASE_DELAY) before counting one failure', async () => {
    const a = await fake('se-retry');
    let calls = 0;
    a.se.behave((_req, res) => {
      calls++;
      if (calls === 3) a.se.behave(undefined);
      res.writeHead(500).end('{}');
    });
    const m = await leaderOver([a.config], { httpRetries: 3, retryBaseDelayMs: 30 });
    await waitFor(async () => (await entry(m, 'se-retry'))?.reachable === true, { timeoutMs: 5_000 });
    expect(a.se.requests).toBeGreaterThanOrEqual(4);
    expect(await metricValue(m.registry, 'capacity_poll_failures_total')).toBe(0);
  });

  it('reports status for /health/ready: role, leader and term, poll age per SE, writable count', async () => {
    const a = await fake('se-s1');
    const b = await fake('se-s2');
    b.se.set({ mode: 'ro' });
    const m = await leaderOver([a.config, b.config]);
    await waitFor(async () => (await m.cache.readMany(['se-s1', 'se-s2'])).size === 2, { timeoutMs: 5_000 });
    const status = await m.monitor.status();
    expect(status).toMatchObject({
      enabled: true,
      role: 'leader',
      instance_id: 'poller',
      leader_id: 'poller',
      leader_term: m.monitor.term,
      writable_storage_elements: 1,
    });
    expect(status.storage_elements['se-s1']?.last_poll_age_seconds).toBeLessThan(5);
    expect(status.storage_elements['se-s2']?.mode).toBe('ro');
    expect(await metricValue(m.registry, 'storage_elements_available', { mode: 'ro' })).toBe(1);
    expect(await metricValue(m.registry, 'storage_elements_available', { mode: 'rw' })).toBe(1);
  });
});

describe('bad answers from a storage element', () => {
  const cases: Array<[string, (f: FakeSe) => void, string]> = [
    [
      'garbage JSON',
      (f) => f.behave((_q, r) => r.writeHead(200, { 'content-type': 'application/json' }).end('{not json')),
      'invalid_response',
    ],
    ['negative numbers', (f) => f.set({ available: -5 }), 'invalid_response'],
    ['absurd numbers', (f) => f.set({ total: 2 ** 62, available: 2 ** 61, used: 0 }), 'invalid_response'],
    ['available > total', (f) => f.set({ available: 2_000_000 }), 'invalid_response'],
    [
      'used + available > total',
      (f) => f.set({ used: 600_000, available: 600_000, percent_used: 60 }),
      'invalid_response',
    ],
    ['another storage_id', (f) => f.set({ storage_id: 'someone-else' }), 'invalid_response'],
    [
      'a redirect to another host',
      (f) => f.behave((_q, r) => r.writeHead(302, { location: 'http://127.0.0.2:9/api/v1/capacity' }).end()),
      'redirect_refused',
    ],
    ['a storm of 5xx', (f) => f.behave((_q, r) => r.writeHead(502).end()), 'http_5xx'],
  ];
  for (const [name, breakIt, errorType] of cases) {
    it(`refuses ${name}: counted as ${errorType}, never writable`, async () => {
      const a = await fake('se-bad');
      breakIt(a.se);
      const m = await leaderOver([a.config], { failureThreshold: 2 });
      await waitFor(
        async () => (await metricValue(m.registry, 'capacity_poll_failures_total', { error_type: errorType })) >= 2,
        { timeoutMs: 5_000 },
      );
      expect(await entry(m, 'se-bad')).toBeUndefined();
      expect(await m.cache.readHealth('se-bad')).toMatch(new RegExp(`^unhealthy: ${errorType}`));
      expect((await m.monitor.status()).writable_storage_elements).toBe(0);
    });
  }
});

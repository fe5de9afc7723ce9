/**
 * Benchmark 1 of issue 5: capacity polling traffic of 4 ingest replicas
 * over 100 storage elements, against the seed's numbers
 * (capacity-management-migration-plan.md: 1,152,000 requests/day without
 * coordination, 288,000 with a leader).
 *
 * Run: eval "$(pnpm -s polyvision services up)" && node bench/ingest/polling-traffic.ts
 *      [--hours 0.5] [--scale 20] [--ses 100] [--replicas 4] [--uploads-per-day 20000]
 *      [--idle-max-factor 4] [--adaptive-only]
 *
 * Scaled time: every polling interval is divided by `scale` (seed base 30 s
 * → 1.5 s at scale 20) and the run covers `hours` simulated hours; the
 * request counts are then extrapolated to 24 h. Leases are not scaled (3 s
 * real): leadership does not change during a run.
 *
 * Three configurations, one after the other, in the same process, against
 * the same 100 simulated SEs (one HTTP server, one path per SE):
 * - `uncoordinated`: each of the 4 replicas polls every SE on its own (each
 *   has its own leader key), seed behaviour (every base interval);
 * - `leader_seed`: one leader, seed behaviour (SEs whose report changes on
 *   every poll, so no 304 and no idle back-off: exactly the seed's schedule);
 * - `leader_adaptive`: one leader with everything of this implementation:
 *   If-None-Match, idle SEs polled less (≤ 4 × base), `ro`/`ar` at the max
 *   interval, near-full at base/2, reservations written through to the cache
 *   (noteReservation), lazy updates on 507. Workload: `uploads-per-day`
 *   uploads of 1–4 GiB placed by the selector through random replicas, and
 *   2 % of changes made behind ingest's back (deletions by others).
 *
 * Freshness, sampled every base/5 for every writable SE: the age of the
 * last successful poll, and how long the cached `available` differs from
 * the SE's true value by more than 1 MiB.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import {
  AdaptiveCapacityMonitor,
  CapacityCache,
  compileCapacityMonitorSettings,
  type StorageElementConfig,
  selectStorage,
} from '../../core/src/capacity/index.ts';
import { Elections, RedisTtlStore, Registry } from '../../shared/src/index.ts';
import { Redis } from './redis-client.ts';

const { values } = parseArgs({
  options: {
    hours: { type: 'string', default: '0.5' },
    scale: { type: 'string', default: '20' },
    ses: { type: 'string', default: '100' },
    replicas: { type: 'string', default: '4' },
    'uploads-per-day': { type: 'string', default: '20000' },
    /** CAPACITY_MONITOR_IDLE_MAX_FACTOR of the adaptive configuration. */
    'idle-max-factor': { type: 'string', default: '4' },
    /** Run only the adaptive configuration (no baselines): for trying settings. */
    'adaptive-only': { type: 'boolean', default: false },
  },
});
const HOURS = Number(values.hours);
const SCALE = Number(values.scale);
const SE_COUNT = Number(values.ses);
const REPLICAS = Number(values.replicas);
const UPLOADS_PER_DAY = Number(values['uploads-per-day']);
const RUN_MS = (HOURS * 3_600_000) / SCALE;
const GiB = 2 ** 30;
const TiB = 2 ** 40;
const REDIS_URL = process.env.REDIS_URL;
if (!REDIS_URL) {
  process.stderr.write('REDIS_URL is not set: eval "$(pnpm -s polyvision services up)" first\n');
  process.exit(2);
}

interface SimSe {
  id: string;
  mode: 'rw' | 'ro' | 'ar';
  total: number;
  used: number;
  location: string;
  /** Bumped on every change; the ETag. */
  version: number;
}

type Mode = 'seed' | 'realistic';
const counters = { requests: 0, notModified: 0 };
let mode: Mode = 'seed';
const ses: SimSe[] = Array.from({ length: SE_COUNT }, (_, i) => ({
  id: `se-${String(i).padStart(3, '0')}`,
  // 10 % read-only or archive, as a real fleet has.
  mode: i % 20 === 0 ? 'ro' : i % 20 === 10 ? 'ar' : 'rw',
  total: 100 * TiB,
  // A few nearly full.
  used: i % 25 === 3 ? 92 * TiB : Math.floor(((i * 37) % 60) * TiB),
  location: `dc${(i % 5) + 1}`,
  version: 1,
}));
const byId = new Map(ses.map((se) => [se.id, se]));

function report(se: SimSe) {
  // Seed emulation: every SE writable, none near full, numbers changing on every poll,
  // so the monitor keeps the seed's fixed schedule (every base interval).
  const seed = mode === 'seed';
  const used = seed ? Math.min(se.used, se.total / 2) : se.used;
  return {
    storage_id: se.id,
    mode: seed ? 'rw' : se.mode,
    total: se.total,
    used,
    available: se.total - used,
    // Seed emulation: a value that differs on every answer, so no poll ever looks unchanged.
    reserved: seed ? counters.requests : 0,
    percent_used: Math.round((used / se.total) * 10_000) / 100,
    health: 'healthy',
    backend: 'local',
    location: se.location,
    endpoint: 'http://127.0.0.1:1',
    last_update: new Date().toISOString(),
  };
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const match = /^\/(se-\d+)\/api\/v1\/capacity$/.exec(req.url ?? '');
  const se = match ? byId.get(match[1] as string) : undefined;
  if (!se) {
    res.writeHead(404).end();
    return;
  }
  counters.requests++;
  if (mode === 'realistic') {
    const etag = `W/"${se.version}"`;
    if (req.headers['if-none-match'] === etag) {
      counters.notModified++;
      res.writeHead(304, { etag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', etag }).end(JSON.stringify(report(se)));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(report(se)));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const config: StorageElementConfig[] = ses.map((se) => ({
  storage_id: se.id,
  endpoint: `${base}/${se.id}`,
  token: 't',
  location: se.location,
}));

const settings = compileCapacityMonitorSettings({
  leaderTtlMs: 3_000,
  leaderRenewalIntervalMs: 1_000,
  baseIntervalMs: 30_000 / SCALE,
  maxIntervalMs: 300_000 / SCALE,
  httpTimeoutMs: 15_000 / SCALE + 1_000,
  httpRetries: 0,
  retryBaseDelayMs: 2_000 / SCALE,
  cacheTtlMs: 600_000,
  healthTtlMs: 600_000,
  pollConcurrency: 32,
  lazyLockMs: 5_000 / SCALE,
  idleMaxFactor: Number(values['idle-max-factor']),
});

interface Replica {
  monitor: AdaptiveCapacityMonitor;
  redis: Redis;
  cache: CapacityCache;
  elections: Elections;
}

async function replicas(prefix: string, ownKeys: boolean): Promise<Replica[]> {
  return Promise.all(
    Array.from({ length: REPLICAS }, async (_, i) => {
      const redis = new Redis(REDIS_URL as string, { lazyConnect: true });
      await redis.connect();
      const keyPrefix = ownKeys ? `${prefix}r${i}:` : prefix;
      const store = new RedisTtlStore(redis, { keyPrefix });
      const elections = new Elections(store);
      const cache = new CapacityCache(redis, keyPrefix);
      const monitor = new AdaptiveCapacityMonitor({
        instanceId: `bench-${i}`,
        storageElements: config,
        settings,
        elections,
        store,
        cache,
        registry: new Registry(),
      });
      return { monitor, redis, cache, elections };
    }),
  );
}

async function cleanup(list: Replica[], prefix: string): Promise<void> {
  for (const r of list) await r.monitor.close();
  for (const r of list) await r.elections.close();
  const redis = list[0]?.redis;
  if (redis) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  for (const r of list) r.redis.disconnect();
}

interface Outcome {
  configuration: string;
  simulated_hours: number;
  requests: number;
  not_modified: number;
  requests_per_day: number;
  not_modified_per_day: number;
  uploads?: number;
  external_changes?: number;
  max_poll_age_seconds?: number;
  p99_poll_age_seconds?: number;
  max_cache_error_seconds?: number;
  max_cache_error_external_seconds?: number;
  /** CPU of this process (monitors + simulated SEs) per request, in ms. */
  cpu_ms_per_request: number;
}

function extrapolate(name: string, requests: number, notModified: number, cpu: NodeJS.CpuUsage): Outcome {
  const perDay = 24 / HOURS;
  return {
    cpu_ms_per_request: Math.round(((cpu.user + cpu.system) / 1000 / Math.max(1, requests)) * 100) / 100,
    configuration: name,
    simulated_hours: HOURS,
    requests,
    not_modified: notModified,
    requests_per_day: Math.round(requests * perDay),
    not_modified_per_day: Math.round(notModified * perDay),
  };
}

async function runSeedLike(name: string, ownKeys: boolean): Promise<Outcome> {
  mode = 'seed';
  const prefix = `bench:${name}:${Date.now()}:`;
  const list = await replicas(prefix, ownKeys);
  for (const r of list) r.monitor.start();
  await new Promise((r) => setTimeout(r, 1_000)); // elections settle
  const start = { ...counters };
  const cpu = process.cpuUsage();
  await new Promise((r) => setTimeout(r, RUN_MS));
  const outcome = extrapolate(
    name,
    counters.requests - start.requests,
    counters.notModified - start.notModified,
    process.cpuUsage(cpu),
  );
  await cleanup(list, prefix);
  return outcome;
}

async function runAdaptive(): Promise<Outcome> {
  mode = 'realistic';
  const prefix = `bench:adaptive:${Date.now()}:`;
  const list = await replicas(prefix, false);
  for (const r of list) r.monitor.start();
  await new Promise((r) => setTimeout(r, 1_000));
  const start = { ...counters };
  const cpu = process.cpuUsage();
  const simSeconds = (ms: number) => (ms * SCALE) / 1000;
  // Upload arrivals (Poisson), scaled.
  const meanGapMs = 86_400_000 / UPLOADS_PER_DAY / SCALE;
  let uploads = 0;
  let external = 0;
  /** When each SE's cache first disagreed with the truth (for > 1 MiB), and whether ingest knew of the change. */
  const wrongSince = new Map<string, number>();
  /** SEs changed behind ingest's back whose cache has not caught up yet. */
  const externalPending = new Set<string>();
  let maxErrorMs = 0;
  let maxErrorExternalMs = 0;
  let maxPollAgeMs = 0;
  const ages: number[] = [];
  let running = true;
  const workload = (async () => {
    while (running) {
      await new Promise((r) => setTimeout(r, -Math.log(1 - Math.random()) * meanGapMs));
      if (!running) break;
      const replica = list[Math.floor(Math.random() * list.length)] as Replica;
      if (Math.random() < 0.02) {
        // A deletion by someone else: ingest does not know.
        const se = ses[Math.floor(Math.random() * ses.length)] as SimSe;
        se.used = Math.max(0, se.used - 3 * GiB);
        se.version++;
        external++;
        externalPending.add(se.id);
        continue;
      }
      const size = Math.floor((1 + Math.random() * 3) * GiB);
      const candidates = await replica.monitor.candidates();
      const chosen = selectStorage(candidates, { sizeBytes: size }).chosen;
      if (!chosen) continue;
      const se = byId.get(chosen.storage_id) as SimSe;
      // Reservation on the SE and write-through to the cache at the same moment.
      se.used += size;
      se.version++;
      await replica.monitor.noteReservation(se.id, size);
      uploads++;
    }
  })();
  const sampler = (async () => {
    const cache = (list[0] as Replica).cache;
    const ids = ses.filter((s) => s.mode === 'rw').map((s) => s.id);
    while (running) {
      await new Promise((r) => setTimeout(r, settings.baseIntervalMs / 5));
      const entries = await cache.readMany(ids);
      const now = Date.now();
      for (const id of ids) {
        const se = byId.get(id) as SimSe;
        const entry = entries.get(id);
        if (!entry) continue;
        const age = now - Date.parse(entry.last_poll);
        ages.push(age);
        maxPollAgeMs = Math.max(maxPollAgeMs, age);
        const wrong = Math.abs(entry.available - (se.total - se.used)) > 2 ** 20;
        if (wrong) {
          const since = wrongSince.get(id) ?? now;
          wrongSince.set(id, since);
          if (externalPending.has(id)) maxErrorExternalMs = Math.max(maxErrorExternalMs, now - since);
          else maxErrorMs = Math.max(maxErrorMs, now - since);
        } else {
          wrongSince.delete(id);
          externalPending.delete(id);
        }
      }
    }
  })();
  await new Promise((r) => setTimeout(r, RUN_MS));
  running = false;
  await Promise.all([workload, sampler]);
  const outcome = extrapolate(
    'leader_adaptive',
    counters.requests - start.requests,
    counters.notModified - start.notModified,
    process.cpuUsage(cpu),
  );
  ages.sort((a, b) => a - b);
  const p99 = ages[Math.floor(ages.length * 0.99)] ?? 0;
  await cleanup(list, prefix);
  return {
    ...outcome,
    uploads,
    external_changes: external,
    max_poll_age_seconds: Math.round(simSeconds(maxPollAgeMs)),
    p99_poll_age_seconds: Math.round(simSeconds(p99)),
    max_cache_error_seconds: Math.round(simSeconds(maxErrorMs)),
    max_cache_error_external_seconds: Math.round(simSeconds(maxErrorExternalMs)),
  };
}

process.stderr.write(
  `polling traffic: ${SE_COUNT} SEs × ${REPLICAS} replicas, ${HOURS} simulated h per configuration at scale 1/${SCALE} (${Math.round(RUN_MS / 1000)} s each)\n`,
);
if (values['adaptive-only']) {
  const adaptive = await runAdaptive();
  server.close();
  const result = {
    ...adaptive,
    idle_max_factor: settings.idleMaxFactor,
    vs_seed_288000: adaptive.requests_per_day / 288_000,
  };
  mkdirSync(new URL('../results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL(`../results/ingest-polling-traffic-idle${settings.idleMaxFactor}.json`, import.meta.url),
    `${JSON.stringify(result, null, 2)}\n`,
  );
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  process.exit(0);
}
const uncoordinated = await runSeedLike('uncoordinated', true);
process.stderr.write(`${JSON.stringify(uncoordinated)}\n`);
const leaderSeed = await runSeedLike('leader_seed', false);
process.stderr.write(`${JSON.stringify(leaderSeed)}\n`);
const adaptive = await runAdaptive();
process.stderr.write(`${JSON.stringify(adaptive)}\n`);
server.close();

const result = {
  benchmark: 'ingest-polling-traffic',
  measured_at: new Date().toISOString(),
  host: { cpus: (await import('node:os')).cpus().length },
  parameters: {
    hours: HOURS,
    scale: SCALE,
    ses: SE_COUNT,
    replicas: REPLICAS,
    uploads_per_day: UPLOADS_PER_DAY,
    idle_max_factor: settings.idleMaxFactor,
  },
  seed_reference: { uncoordinated_per_day: 1_152_000, leader_per_day: 288_000 },
  configurations: [uncoordinated, leaderSeed, adaptive],
  ratios: {
    leader_seed_vs_uncoordinated: leaderSeed.requests_per_day / uncoordinated.requests_per_day,
    adaptive_vs_leader_seed: adaptive.requests_per_day / leaderSeed.requests_per_day,
    adaptive_vs_seed_288000: adaptive.requests_per_day / 288_000,
  },
};
mkdirSync(new URL('../results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('../results/ingest-polling-traffic.json', import.meta.url),
  `${JSON.stringify(result, null, 2)}\n`,
);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
process.exit(0);

/**
 * Leader failover on real Redis with 3 contender processes (issue 2, benchmark).
 *
 *   node bench/leadership/failover.ts [--quick]
 *   node bench/leadership/failover.ts --lease 30000 [--reps 5]   # one lease, no stall arms
 *   node bench/leadership/failover.ts --lease 6000 --notify --stalls   # as shipped (capacity monitor)
 *
 * `--notify` gives contenders a subscriber connection (release notices on
 * Redis pub/sub, `RedisTtlStore` option `subscriber`) and runs the graceful
 * arm twice, without and with notices, side by side. `--stalls` keeps the
 * stall arms for the `--lease` given.
 *
 * `--lease 30000` measures the lease the services ship (the capacity
 * monitor's `CAPACITY_MONITOR_LEADER_TTL` = 30 s, the reconciler's 30 s) with
 * their follower retry (lease/10) and renewals (lease/3).
 *
 * Starts a private redis-server on a free loopback port (so that pausing it
 * stalls nobody else), then for each lease:
 * - crash: SIGKILL the leader, time until another contender holds leadership;
 * - graceful: SIGTERM the leader (it releases by compare-and-delete), same;
 * a replacement contender is started after each kill so that 3 always
 * compete, and the kill happens at a random phase of the renewal cycle.
 * Then, at two leases, 1 s stalls of Redis (`CLIENT PAUSE 1000 ALL`, and
 * SIGSTOP/SIGCONT of the server) while a leader holds: any leadership loss
 * is a flap. Writes bench/results/leadership-failover.json.
 *
 * Percentiles are nearest-rank: with 20 samples p99 is the maximum.
 */
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_RENEW_DEADLINE_RATIO,
  defaultRetryIntervalMs,
} from '../../shared/src/leadership/index.ts';
import { type RunningChild, spawnChild } from '../../shared/src/process/index.ts';
import { Redis } from './redis-client.ts';

const quick = process.argv.includes('--quick');
const argValue = (name: string): number | undefined => {
  const at = process.argv.indexOf(name);
  if (at < 0) return undefined;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value <= 0) {
    process.stderr.write(`${name} needs a positive integer (milliseconds or a count)\n`);
    process.exit(2);
  }
  return value;
};
const onlyLeaseMs = argValue('--lease');
const notify = process.argv.includes('--notify');
const stallsForLease = process.argv.includes('--stalls');
const repsArg = argValue('--reps');
const here = new URL('.', import.meta.url);
const resultsPath = new URL(
  `../results/leadership-failover${onlyLeaseMs ? `.lease-${onlyLeaseMs}` : ''}${notify ? '.notify' : ''}${quick ? '.quick' : ''}.json`,
  import.meta.url,
);

interface ContenderEvent {
  event: 'ready' | 'leader' | 'lost' | 'released';
  id: string;
  atMs: number;
  term?: number;
  code?: string;
}

const nowMs = (): number => performance.timeOrigin + performance.now();

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A private, non-persistent redis-server on loopback. */
async function startRedis(): Promise<{ url: string; child: RunningChild; admin: Redis; version: string }> {
  const port = await freePort();
  const child = spawnChild(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdout: 'ignore', killTimeoutMs: 2_000 },
  );
  child.done.catch(() => undefined);
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { retryStrategy: () => 50 });
  admin.on('error', () => undefined); // refused until the server listens; retried
  const deadline = nowMs() + 10_000;
  while ((await admin.ping().catch(() => null)) !== 'PONG') {
    if (nowMs() > deadline) throw new Error(`redis-server on ${url} did not answer within 10 s`);
    await sleep(50);
  }
  const info = await admin.info('server');
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  return { url, child, admin, version };
}

/** The three (or more) contender processes of one arm, and their event stream. */
class Field {
  readonly events: ContenderEvent[] = [];
  readonly #children = new Map<string, RunningChild>();
  readonly #waiters = new Set<() => void>();
  #next = 0;
  readonly #redisUrl: string;
  readonly #key: string;
  readonly #leaseMs: number;
  readonly #notify: boolean;

  constructor(redisUrl: string, key: string, leaseMs: number, withNotices = false) {
    this.#redisUrl = redisUrl;
    this.#key = key;
    this.#leaseMs = leaseMs;
    this.#notify = withNotices;
  }

  /** Starts one contender and waits until it campaigns. */
  async add(): Promise<string> {
    const id = `c${this.#next++}`;
    const child = spawnChild(
      process.execPath,
      [
        new URL('contender.ts', here).pathname,
        this.#redisUrl,
        this.#key,
        String(this.#leaseMs),
        id,
        ...(this.#notify ? ['notify'] : []),
      ],
      { stdin: 'pipe', killTimeoutMs: 2_000 },
    );
    child.done.catch(() => undefined);
    this.#children.set(id, child);
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      this.events.push(JSON.parse(line) as ContenderEvent);
      for (const wake of this.#waiters) wake();
    });
    await this.waitFor((e) => e.id === id && e.event === 'ready', 30_000);
    return id;
  }

  /** Resolves with the first event (from index `from`) matching `predicate`. */
  async waitFor(predicate: (e: ContenderEvent) => boolean, timeoutMs: number, from = 0): Promise<ContenderEvent> {
    const deadline = nowMs() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(predicate);
      if (found) return found;
      const left = deadline - nowMs();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for an event`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done(): void {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        const waiters = this.#waiters;
        waiters.add(done);
      });
    }
  }

  /** The id of the contender that leads now, from the event log. */
  currentLeader(): string | undefined {
    let leader: string | undefined;
    for (const e of this.events) {
      if (e.event === 'leader') leader = e.id;
      else if ((e.event === 'lost' || e.event === 'released') && e.id === leader) leader = undefined;
    }
    return leader;
  }

  signal(id: string, signal: 'SIGKILL' | 'SIGTERM'): void {
    this.#children.get(id)?.child.kill(signal);
  }

  async gone(id: string): Promise<void> {
    const child = this.#children.get(id);
    if (!child) return;
    await child.done.catch(() => undefined);
    this.#children.delete(id);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#children.values()].map((c) => c.kill()));
    this.#children.clear();
  }
}

interface ArmResult {
  leaseMs: number;
  retryIntervalMs: number;
  kind: 'crash' | 'graceful';
  /** Followers had release notices (Redis pub/sub). */
  notify: boolean;
  repetitions: number;
  samplesMs: number[];
  minMs: number;
  medianMs: number;
  p99Ms: number;
  maxMs: number;
  /**
   * What the design predicts, in ms: crash = the record's remaining TTL (2/3
   * to 1 lease, as renewals reset it every lease/3) plus up to one retry
   * interval; graceful = up to one retry interval plus round trips.
   */
  expectedRangeMs: [number, number];
  /** A second contender reported leadership while a live leader had not reported an end. */
  overlaps: number;
  /** Leaderships lost by a contender that was not killed. */
  unexpectedLosses: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
const ratio = (ms: number, anchorMs: number): number => Math.round((ms / anchorMs) * 1000) / 1000;

/** Kill the leader `repetitions` times with `signal`; time until the next leader. */
async function failoverArm(
  redisUrl: string,
  leaseMs: number,
  kind: 'crash' | 'graceful',
  repetitions: number,
  withNotices = false,
): Promise<ArmResult> {
  const field = new Field(redisUrl, `bench:failover:${kind}:${leaseMs}:${Date.now()}`, leaseMs, withNotices);
  const samples: number[] = [];
  let overlaps = 0;
  const killed = new Set<string>();
  try {
    for (let i = 0; i < 3; i += 1) await field.add();
    let leader = await field.waitFor((e) => e.event === 'leader', leaseMs * 3);
    for (let rep = 0; rep < repetitions; rep += 1) {
      await sleep(Math.random() * (leaseMs / 3)); // random phase of the renewal cycle
      const from = field.events.length;
      const t0 = nowMs();
      killed.add(leader.id);
      field.signal(leader.id, kind === 'crash' ? 'SIGKILL' : 'SIGTERM');
      const next = await field.waitFor((e) => e.event === 'leader' && e.id !== leader.id, leaseMs * 4, from);
      samples.push(next.atMs - t0);
      if (kind === 'graceful') {
        const released = field.events.find((e) => e.id === leader.id && e.event === 'released');
        if (!released || released.atMs > next.atMs) overlaps += 1;
      }
      await field.gone(leader.id);
      await field.add();
      leader = next;
      process.stdout.write(
        `  ${kind}${withNotices ? ' (notify)' : ''} lease ${leaseMs} ms rep ${rep + 1}/${repetitions}: ${round(next.atMs - t0)} ms\n`,
      );
    }
  } finally {
    await field.close();
  }
  // Safety from the event log: a leader event while another live, un-ended leader exists.
  let holder: string | undefined;
  for (const e of field.events) {
    if (e.event === 'leader') {
      if (holder !== undefined && !killed.has(holder)) overlaps += 1;
      holder = e.id;
    } else if ((e.event === 'lost' || e.event === 'released') && e.id === holder) holder = undefined;
  }
  const unexpectedLosses = field.events.filter((e) => e.event === 'lost').length;
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    leaseMs,
    retryIntervalMs: defaultRetryIntervalMs(leaseMs),
    kind,
    notify: withNotices,
    repetitions,
    expectedRangeMs:
      kind === 'crash'
        ? [Math.round((leaseMs * 2) / 3), leaseMs + defaultRetryIntervalMs(leaseMs)]
        : [0, defaultRetryIntervalMs(leaseMs)],
    samplesMs: samples.map(round),
    minMs: round(sorted[0] ?? Number.NaN),
    medianMs: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted.at(-1) ?? Number.NaN),
    overlaps,
    unexpectedLosses,
  };
}

interface StallResult {
  leaseMs: number;
  method: 'client-pause' | 'sigstop';
  stallMs: number;
  stalls: number;
  leaderChanges: number;
  losses: number;
  lossCodes: string[];
}

/** Stall Redis for `stallMs` `stalls` times while 3 contenders run; count flaps. */
async function stallArm(
  redis: { url: string; child: RunningChild; admin: Redis },
  leaseMs: number,
  method: 'client-pause' | 'sigstop',
  stalls: number,
  stallMs = 1_000,
): Promise<StallResult> {
  const field = new Field(redis.url, `bench:stall:${method}:${leaseMs}:${Date.now()}`, leaseMs, notify);
  try {
    for (let i = 0; i < 3; i += 1) await field.add();
    await field.waitFor((e) => e.event === 'leader', leaseMs * 3);
    const from = field.events.length;
    for (let s = 0; s < stalls; s += 1) {
      await sleep(300 + Math.random() * (leaseMs / 3));
      if (method === 'client-pause') {
        await redis.admin.call('CLIENT', 'PAUSE', String(stallMs), 'ALL');
        await sleep(stallMs);
      } else {
        redis.child.child.kill('SIGSTOP');
        await sleep(stallMs);
        redis.child.child.kill('SIGCONT');
      }
      // A loss shows within the renew deadline (2/3 lease) after the stall ends.
      await sleep(Math.max(800, leaseMs * 0.8));
      process.stdout.write(
        `  stall ${method} lease ${leaseMs} ms ${s + 1}/${stalls}: leader ${field.currentLeader()}\n`,
      );
    }
    const after = field.events.slice(from);
    const losses = after.filter((e) => e.event === 'lost');
    return {
      leaseMs,
      method,
      stallMs,
      stalls,
      leaderChanges: after.filter((e) => e.event === 'leader').length,
      losses: losses.length,
      lossCodes: losses.map((e) => e.code ?? 'unknown'),
    };
  } finally {
    await field.close();
  }
}

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const redis = await startRedis();
  const leases = onlyLeaseMs ? [onlyLeaseMs] : [2_000, DEFAULT_LEASE_MS, 10_000];
  const reps = (leaseMs: number, kind: 'crash' | 'graceful'): number =>
    repsArg ?? (quick ? 3 : kind === 'crash' && leaseMs >= 10_000 ? 10 : 20);
  const arms: ArmResult[] = [];
  const stallResults: StallResult[] = [];
  try {
    for (const leaseMs of leases) {
      for (const kind of ['crash', 'graceful'] as const) {
        arms.push(await failoverArm(redis.url, leaseMs, kind, reps(leaseMs, kind), kind === 'crash' && notify));
        if (kind === 'graceful' && notify)
          arms.push(await failoverArm(redis.url, leaseMs, kind, reps(leaseMs, kind), true));
      }
    }
    for (const leaseMs of onlyLeaseMs ? (stallsForLease ? [onlyLeaseMs] : []) : [2_000, DEFAULT_LEASE_MS]) {
      for (const method of ['client-pause', 'sigstop'] as const) {
        stallResults.push(await stallArm(redis, leaseMs, method, quick ? 2 : 8));
      }
    }
  } finally {
    redis.admin.disconnect();
    await redis.child.kill();
  }
  const anchors = {
    seedLockTtl: { crashFailoverMs: 30_000, note: 'seed capacity plan: lock TTL 30 s, "max failover time: 30s"' },
    kubernetesClientGo: {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      crashFailoverMs: [15_000, 17_000],
      gracefulFailoverMs: [1_000, 3_000],
    },
  };
  const byArm = (leaseMs: number, kind: string) => arms.find((a) => a.leaseMs === leaseMs && a.kind === kind);
  const def = { crash: byArm(DEFAULT_LEASE_MS, 'crash'), graceful: byArm(DEFAULT_LEASE_MS, 'graceful') };
  const result = {
    benchmark: 'leadership-failover',
    command: `node bench/leadership/failover.ts${quick ? ' --quick' : ''}${onlyLeaseMs ? ` --lease ${onlyLeaseMs}` : ''}${repsArg ? ` --reps ${repsArg}` : ''}${notify ? ' --notify' : ''}${stallsForLease ? ' --stalls' : ''}`,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    startedAt,
    finishedAt: new Date().toISOString(),
    host: { cpus: cpus().length, node: process.version, redis: redis.version },
    defaults: {
      leaseMs: DEFAULT_LEASE_MS,
      renewIntervalMs: DEFAULT_LEASE_MS / 3,
      renewDeadlineMs: Math.floor(DEFAULT_LEASE_MS * DEFAULT_RENEW_DEADLINE_RATIO),
    },
    anchors,
    ratios: {
      crashMedianVsKubernetes16s: def.crash ? ratio(def.crash.medianMs, 16_000) : null,
      crashMedianVsSeed30s: def.crash ? ratio(def.crash.medianMs, 30_000) : null,
      gracefulMedianVsKubernetes2s: def.graceful ? ratio(def.graceful.medianMs, 2_000) : null,
    },
    arms,
    stalls: stallResults,
  };
  await mkdir(new URL('.', resultsPath), { recursive: true });
  await writeFile(resultsPath, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write('\nlease_ms kind      notify reps  min_ms  median_ms  p99_ms  overlaps  losses\n');
  for (const a of arms) {
    process.stdout.write(
      `${String(a.leaseMs).padEnd(8)} ${a.kind.padEnd(9)} ${String(a.notify).padEnd(6)} ${String(a.repetitions).padEnd(5)} ${String(a.minMs).padEnd(7)} ${String(a.medianMs).padEnd(10)} ${String(a.p99Ms).padEnd(7)} ${String(a.overlaps).padEnd(9)} ${a.unexpectedLosses}\n`,
    );
  }
  for (const s of stallResults) {
    process.stdout.write(
      `stall ${s.method} lease ${s.leaseMs}: ${s.stalls} stalls of ${s.stallMs} ms, leader changes ${s.leaderChanges}, losses ${s.losses}\n`,
    );
  }
  process.stdout.write(`wrote ${resultsPath.pathname}\n`);
}

await main();

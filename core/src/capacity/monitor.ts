import {
  abortableSleep,
  type CapacityReport,
  defaultRetryIntervalMs,
  type Elections,
  type Leadership,
  type Logger,
  type Registry,
  retry,
  silentLogger,
  type TtlStore,
  WRITABLE_STORAGE_MODES,
} from '@polyvision/shared';
import type { Dispatcher } from 'undici';
import type { CachedCapacity, CapacityCache } from './capacity-cache.ts';
import { type CapacityPoll, type FetchCapacityOptions, fetchCapacity, pollErrorType } from './capacity-client.ts';
import { runLeaderTerm, untilAborted } from './leader-term.ts';
import { type CapacityMetrics, createCapacityMetrics } from './metrics.ts';
import type { CapacityMonitorSettings } from './options.ts';
import {
  activityNoted,
  initialPollState,
  type PollState,
  pollFailed,
  pollSucceeded,
  seededPollState,
} from './poll-state.ts';
import type { SelectableStorage } from './selector.ts';
import type { StorageElementConfig } from './storage-elements.ts';

/** The election key of the seed. */
export const CAPACITY_LEADER_KEY = 'capacity_monitor:leader_lock';

/** Options of {@link AdaptiveCapacityMonitor}. */
export interface AdaptiveCapacityMonitorOptions {
  /** This replica's identity, the value of the leader key (`INGEST_INSTANCE_ID`). */
  instanceId: string;
  storageElements: readonly StorageElementConfig[];
  settings: CapacityMonitorSettings;
  /** Elections over the shared TtlStore (Redis in production). */
  elections: Elections;
  /** The same store, to read who leads. */
  store: TtlStore;
  cache: CapacityCache;
  registry: Registry;
  /** @defaultValue {@link CAPACITY_LEADER_KEY} */
  leaderKey?: string;
  logger?: Logger;
  dispatcher?: Dispatcher;
  /**
   * Called when the poll loop has not stopped within lease/4 after a lost
   * leadership (the LeadershipRunner's killer). @defaultValue () => process.exit(1)
   */
  kill?: () => void;
  /** The poll itself, replaceable in benchmarks. @defaultValue fetchCapacity */
  fetch?: (se: StorageElementConfig, options: FetchCapacityOptions) => Promise<CapacityPoll>;
}

/** A capacity entry as ingest uses it. */
export type StorageCandidate = SelectableStorage & CachedCapacity & { endpoint: string };

/** What `/health/ready` shows about the monitor. */
export interface CapacityMonitorStatus {
  enabled: boolean;
  role: 'leader' | 'follower' | 'disabled';
  instance_id: string;
  leader_id: string | null;
  leader_term: number | null;
  /** Per SE: seconds since the last successful poll (null if never), whether reachable, mode. */
  storage_elements: Record<
    string,
    { last_poll_age_seconds: number | null; reachable: boolean | null; mode: string | null; available: number | null }
  >;
  writable_storage_elements: number;
}

/**
 * The capacity monitor of seed capacity-management-migration-plan.md, Phase 1:
 *
 * - Every replica campaigns for `capacity_monitor:leader_lock` (value =
 *   instance id, lease `CAPACITY_MONITOR_LEADER_TTL`, renewed every
 *   `CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL` by {@link Elections}). Only the leader polls `GET /api/v1/capacity` of each
 *   SE, on an adaptive schedule per SE (poll-state.ts), at most
 *   `CAPACITY_MONITOR_POLL_CONCURRENCY` at once, with `If-None-Match` and
 *   `CAPACITY_MONITOR_HTTP_RETRIES` retries backing off 2 s, 4 s, 8 s
 *   (`CAPACITY_MONITOR_RETRY_BASE_DELAY` × 2^n, no jitter, as the seed).
 * - The leader writes `capacity:{se_id}` and `health:{se_id}` stamped with
 *   its term; a write from an older term is refused by the cache, so a
 *   deposed leader that still runs cannot overwrite its successor.
 * - Followers only read the cache.
 * - {@link triggerLazyUpdate}: on a 507 the SE is marked full at once and
 *   refreshed now — by the leader's loop, or by a follower itself under a
 *   short Redis lock so that a burst of 507s costs one request.
 *
 * Each leadership term runs under the shared `LeadershipRunner`
 * (leader-term.ts): a lost lock aborts the poll loop and, if it has not
 * stopped within lease/4, the runner's killer ends the process.
 *
 * Start with {@link start}; stop with {@link close} (releases leadership).
 */
export class AdaptiveCapacityMonitor {
  readonly #o: AdaptiveCapacityMonitorOptions;
  readonly #settings: CapacityMonitorSettings;
  readonly #logger: Logger;
  readonly #metrics: CapacityMetrics;
  readonly #leaderKey: string;
  readonly #closing = new AbortController();
  readonly #states = new Map<string, PollState>();
  readonly #dueAtMs = new Map<string, number>();
  #leadership: Leadership | undefined;
  #lost: AbortController | undefined;
  #leader: { id: string; term: number } | null = null;
  #running: Promise<void> | undefined;
  #wake: () => void = () => undefined;
  #lazyInFlight = new Map<string, Promise<void>>();

  constructor(options: AdaptiveCapacityMonitorOptions) {
    this.#o = options;
    this.#settings = options.settings;
    this.#logger = options.logger ?? silentLogger;
    this.#metrics = createCapacityMetrics(options.registry);
    this.#leaderKey = options.leaderKey ?? CAPACITY_LEADER_KEY;
    this.#metrics.leaderState.set({ instance_id: options.instanceId }, 0);
  }

  /** Whether this replica leads now. */
  get isLeader(): boolean {
    return this.#leadership !== undefined && !this.#leadership.signal.aborted && !this.#lost?.signal.aborted;
  }

  /** The term of the current leadership, if leading. */
  get term(): number | undefined {
    return this.isLeader ? this.#leadership?.term : undefined;
  }

  /** Starts campaigning (and polling while leader). A no-op when disabled or already started. */
  start(): void {
    if (!this.#settings.enabled || this.#running) return;
    this.#running = this.#run().catch((error) => this.#logger.error({ err: error }, 'capacity monitor stopped'));
  }

  /** Stops polling, releases leadership, waits for the loops. Idempotent. */
  async close(): Promise<void> {
    this.#closing.abort();
    this.#wake();
    await this.#running;
    await Promise.allSettled(this.#lazyInFlight.values());
  }

  /**
   * The SEs as the cache knows them, for placement. With the monitor
   * disabled, every configured SE is offered as writable with unknown
   * (unbounded) space and the SEs' reservations decide.
   */
  async candidates(): Promise<StorageCandidate[]> {
    const ses = this.#o.storageElements;
    if (!this.#settings.enabled) {
      return blindCandidates(ses);
    }
    const entries = await this.#o.cache.readMany(ses.map((se) => se.storage_id));
    const out: StorageCandidate[] = [];
    for (const se of ses) {
      const entry = entries.get(se.storage_id);
      this.#metrics.cacheHits.inc({ result: entry ? 'hit' : 'miss' });
      if (entry) out.push({ ...entry, location: entry.location || se.location, endpoint: se.endpoint });
    }
    return out;
  }

  /**
   * Lazy update (seed "Lazy update trigger for 507 errors"): marks the SE
   * full in the cache now and refreshes it out of schedule. Concurrent calls
   * for one SE share one refresh in this process, and the Redis lock
   * `capacity_monitor:lazy:{se_id}` (`CAPACITY_MONITOR_LAZY_LOCK_MS`) makes
   * it one across replicas.
   *
   * @returns when the refresh (or the decision to skip it) is done; never rejects.
   */
  triggerLazyUpdate(
    storageId: string,
    reason: 'insufficient_storage' | 'manual' = 'insufficient_storage',
  ): Promise<void> {
    const se = this.#o.storageElements.find((s) => s.storage_id === storageId);
    if (!se || !this.#settings.enabled) return Promise.resolve();
    this.#metrics.lazyUpdates.inc({ storage_id: storageId, reason });
    const existing = this.#lazyInFlight.get(storageId);
    if (existing) return existing;
    const work = this.#lazyUpdate(se, reason)
      .catch((error) => this.#logger.warn({ err: error, storage_id: storageId }, 'lazy update failed'))
      .finally(() => this.#lazyInFlight.delete(storageId));
    this.#lazyInFlight.set(storageId, work);
    return work;
  }

  /** A reservation was placed on the SE through this replica: lower the cached space now, end its idleness. */
  async noteReservation(storageId: string, sizeBytes: number): Promise<void> {
    if (!this.#settings.enabled) return;
    await this.#o.cache.consume(storageId, sizeBytes);
    const state = this.#states.get(storageId);
    if (state) this.#reschedule(storageId, activityNoted(state, this.#settings));
  }

  /** Role, leader, per-SE freshness; `writable_storage_elements` counts reachable, writable, not unhealthy SEs. */
  async status(): Promise<CapacityMonitorStatus> {
    const candidates = await this.candidates();
    const nowMs = Date.now();
    const storage: CapacityMonitorStatus['storage_elements'] = {};
    for (const se of this.#o.storageElements) {
      const entry = candidates.find((c) => c.storage_id === se.storage_id);
      const lastPollMs = entry?.last_poll ? Date.parse(entry.last_poll) : Number.NaN;
      storage[se.storage_id] = {
        last_poll_age_seconds: Number.isFinite(lastPollMs) ? Math.max(0, (nowMs - lastPollMs) / 1000) : null,
        reachable: entry && this.#settings.enabled ? entry.reachable : null,
        mode: entry && this.#settings.enabled ? entry.mode : null,
        available: entry && this.#settings.enabled ? entry.available : null,
      };
    }
    if (this.#settings.enabled) await this.#refreshLeader().catch(() => undefined);
    return {
      enabled: this.#settings.enabled,
      role: !this.#settings.enabled ? 'disabled' : this.isLeader ? 'leader' : 'follower',
      instance_id: this.#o.instanceId,
      leader_id: this.#leader?.id ?? null,
      leader_term: this.#leader?.term ?? null,
      storage_elements: storage,
      writable_storage_elements: candidates.filter(isWritable).length,
    };
  }

  async #run(): Promise<void> {
    const { elections, instanceId, settings } = { ...this.#o, settings: this.#settings };
    const retryMs = defaultRetryIntervalMs(settings.leaderTtlMs);
    const signal = this.#closing.signal;
    while (!signal.aborted) {
      const startedAt = performance.now();
      let leadership: Leadership | null = null;
      try {
        leadership = await elections.acquire(this.#leaderKey, instanceId, settings.leaderTtlMs, {
          renewIntervalMs: settings.leaderRenewalIntervalMs,
        });
        this.#metrics.lockAcquisition.observe(
          { result: leadership ? 'acquired' : 'held_by_other' },
          (performance.now() - startedAt) / 1000,
        );
      } catch (error) {
        this.#metrics.lockAcquisition.observe({ result: 'error' }, (performance.now() - startedAt) / 1000);
        this.#logger.warn({ err: error }, 'capacity monitor: leader lock unreachable; staying follower');
      }
      if (leadership) {
        await this.#lead(leadership);
        continue;
      }
      await this.#refreshLeader().catch(() => undefined);
      await abortableSleep(retryMs, signal).catch(() => undefined);
    }
  }

  /** One term as leader: the poll loop under the shared LeadershipRunner (leader-term.ts). */
  async #lead(leadership: Leadership): Promise<void> {
    const { instanceId } = this.#o;
    this.#leadership = leadership;
    this.#leader = { id: instanceId, term: leadership.term };
    this.#metrics.leaderState.set({ instance_id: instanceId }, 1);
    this.#metrics.leaderTransitions.inc({ instance_id: instanceId, transition_type: 'acquired' });
    this.#logger.info({ term: leadership.term }, 'capacity monitor: leader');
    const termOver = new AbortController();
    this.#lost = termOver;
    let problem: unknown = null;
    try {
      problem = await runLeaderTerm({
        leadership,
        elections: this.#o.elections,
        store: this.#o.store,
        key: this.#leaderKey,
        instanceId,
        leaseMs: this.#settings.leaderTtlMs,
        watchIntervalMs: Math.max(
          10,
          Math.min(this.#settings.leaderRenewalIntervalMs, Math.floor(this.#settings.leaderTtlMs / 6)),
        ),
        closing: this.#closing.signal,
        ...(this.#o.kill ? { kill: this.#o.kill } : {}),
        logger: this.#logger,
        onRenewed: () => this.#metrics.leaderTransitions.inc({ instance_id: instanceId, transition_type: 'renewed' }),
        onSuccessor: (leader) => {
          this.#leader = leader;
        },
        work: (signal) => {
          const onStop = () => {
            termOver.abort(signal.reason);
            this.#wake();
          };
          signal.addEventListener('abort', onStop, { once: true });
          return this.#pollLoop(leadership.term, signal).finally(() => signal.removeEventListener('abort', onStop));
        },
      });
    } finally {
      termOver.abort();
      this.#metrics.leaderState.set({ instance_id: instanceId }, 0);
      if (!this.#closing.signal.aborted) {
        this.#metrics.leaderTransitions.inc({ instance_id: instanceId, transition_type: 'lost' });
        this.#logger.warn({ term: leadership.term, reason: String(problem) }, 'capacity monitor: lost leadership');
      }
      this.#leadership = undefined;
      this.#states.clear();
      this.#dueAtMs.clear();
    }
  }

  async #refreshLeader(): Promise<void> {
    const record = await this.#o.store.get(this.#leaderKey);
    this.#leader = record ? { id: record.value, term: record.term } : null;
  }

  /**
   * The leader's scheduler: starts the poll of every due SE (at most
   * `pollConcurrency` in flight, each on its own, never waiting for a whole
   * round), then sleeps until the next SE is due or a poll ends or a lazy
   * update asks for one.
   */
  async #pollLoop(term: number, stop: AbortSignal): Promise<void> {
    const seeds = await this.#seedStates(stop);
    if (!seeds) return;
    const nowMs = Date.now();
    for (const se of this.#o.storageElements) {
      this.#states.set(se.storage_id, seeds.get(se.storage_id) ?? initialPollState(this.#settings));
      this.#dueAtMs.set(se.storage_id, nowMs);
    }
    const inFlight = new Set<Promise<void>>();
    while (!stop.aborted) {
      const now = Date.now();
      for (const se of this.#o.storageElements) {
        if (inFlight.size >= this.#settings.pollConcurrency) break;
        if ((this.#dueAtMs.get(se.storage_id) ?? Number.POSITIVE_INFINITY) > now) continue;
        this.#dueAtMs.set(se.storage_id, Number.POSITIVE_INFINITY);
        const poll: Promise<void> = this.#pollAndStore(se, term, stop).finally(() => {
          inFlight.delete(poll);
          this.#updateAvailableGauge();
          this.#wake();
        });
        inFlight.add(poll);
      }
      const next = Math.min(...this.#dueAtMs.values());
      const waitMs = inFlight.size >= this.#settings.pollConcurrency ? 2 ** 31 - 1 : next - Date.now();
      if (waitMs <= 0) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(waitMs, 2 ** 31 - 1));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    // Polls in flight were aborted with `stop`; a cache write still on its way (Redis slow: often why
    // the lock was lost) is not waited for: the cache refuses it if a successor's term is newer, and
    // waiting would trip the runner's killer and end the whole process.
    void Promise.allSettled([...inFlight]);
  }

  /**
   * The poll states a new leader starts from, seeded from the cache
   * (`seededPollState`): an SE the previous leader found unhealthy stays
   * unhealthy, with its failure count, until it recovers under this one.
   * Retried every base interval while Redis does not answer (the leader
   * could not write the cache then anyway).
   *
   * @returns the states by SE id, or undefined when `stop` aborted first.
   */
  async #seedStates(stop: AbortSignal): Promise<Map<string, PollState> | undefined> {
    const ids = this.#o.storageElements.map((se) => se.storage_id);
    while (!stop.aborted) {
      try {
        const read = await untilAborted(
          Promise.all([this.#o.cache.readMany(ids), this.#o.cache.readHealthMany(ids)]),
          stop,
        );
        if (!read) return undefined; // stopped while Redis did not answer
        const [entries, health] = read;
        return new Map(ids.map((id) => [id, seededPollState(this.#settings, entries.get(id), health.get(id))]));
      } catch (error) {
        this.#logger.warn({ err: error }, 'capacity monitor: cannot read the cache to seed poll states; retrying');
        await abortableSleep(this.#settings.baseIntervalMs, stop).catch(() => undefined);
      }
    }
    return undefined;
  }

  /** Polls one SE with retries and writes the cache; updates its schedule. Never throws. */
  async #pollAndStore(se: StorageElementConfig, term: number, stop: AbortSignal, attempts?: number): Promise<void> {
    const id = se.storage_id;
    const state = this.#states.get(id) ?? initialPollState(this.#settings);
    const startedAt = performance.now();
    const startedAtMs = Date.now();
    const fetcher = this.#o.fetch ?? fetchCapacity;
    try {
      const poll = await retry(
        () =>
          fetcher(se, {
            timeoutMs: this.#settings.httpTimeoutMs,
            etag: state.report ? state.etag : undefined,
            signal: stop,
            ...(this.#o.dispatcher ? { dispatcher: this.#o.dispatcher } : {}),
          }),
        {
          attempts: attempts ?? this.#settings.httpRetries + 1,
          baseDelayMs: this.#settings.retryBaseDelayMs,
          maxDelayMs: this.#settings.retryBaseDelayMs * 2 ** Math.max(0, this.#settings.httpRetries),
          factor: 2,
          jitter: 'none',
          signal: stop,
        },
      );
      const report = poll.status === 'changed' ? poll.report : state.report;
      if (!report) throw new Error('304 without a previous report');
      const changed = poll.status === 'changed' && !sameNumbers(report, state.report);
      const next = pollSucceeded(state, this.#settings, report, poll.etag, changed);
      this.#metrics.pollDuration.observe(
        { storage_id: id, status: poll.status === 'changed' ? 'ok' : 'not_modified' },
        (performance.now() - startedAt) / 1000,
      );
      await this.#store(se, report, next, term, new Date());
      this.#reschedule(id, next, startedAtMs);
    } catch (error) {
      if (stop.aborted) return;
      const errorType = pollErrorType(error);
      this.#metrics.pollDuration.observe({ storage_id: id, status: 'error' }, (performance.now() - startedAt) / 1000);
      this.#metrics.pollFailures.inc({ storage_id: id, error_type: errorType });
      const next = pollFailed(state, this.#settings, errorType);
      this.#logger.warn({ storage_id: id, err: error, failures: next.consecutiveFailures }, 'capacity poll failed');
      await this.#storeFailure(se, next, term, error).catch((e) =>
        this.#logger.warn({ err: e, storage_id: id }, 'capacity cache write failed'),
      );
      this.#reschedule(id, next, startedAtMs);
    }
  }

  async #store(se: StorageElementConfig, report: CapacityReport, state: PollState, term: number, at: Date) {
    const entry: CachedCapacity = {
      ...report,
      location: report.location,
      endpoint: report.endpoint,
      last_poll: at.toISOString(),
      term,
      reachable: state.healthy,
      full_marked_at: null,
      consecutive_failures: state.consecutiveFailures,
    };
    const health = report.health === 'unhealthy' ? 'unhealthy: reported by the storage element' : report.health;
    const recovering = `unhealthy: recovering, ${state.consecutiveSuccesses} of ${this.#settings.recoveryThreshold} polls succeeded`;
    const written = await this.#o.cache.write(entry, state.healthy ? health : recovering, this.#settings);
    if (!written) this.#logger.warn({ storage_id: se.storage_id, term }, 'cache holds a newer term; write refused');
  }

  async #storeFailure(se: StorageElementConfig, state: PollState, term: number, error: unknown): Promise<void> {
    const reason = `unhealthy: ${state.lastError}: ${error instanceof Error ? error.message : String(error)}`.slice(
      0,
      500,
    );
    const previous = (await this.#o.cache.readMany([se.storage_id])).get(se.storage_id);
    if (previous) {
      const entry: CachedCapacity = {
        ...previous,
        term: Math.max(term, previous.term),
        reachable: state.healthy,
        consecutive_failures: state.consecutiveFailures,
      };
      if (previous.term <= term)
        await this.#o.cache.write(entry, state.healthy ? previous.health : reason, this.#settings);
    } else if (!state.healthy) {
      await this.#o.cache.writeHealth(se.storage_id, reason, this.#settings.healthTtlMs);
    }
  }

  /** Next poll `state.intervalMs` after `fromMs` (the start of the last poll: a fixed rate, not a fixed delay). */
  #reschedule(storageId: string, state: PollState, fromMs = Date.now()): void {
    this.#states.set(storageId, state);
    if (this.#dueAtMs.has(storageId)) {
      const current = this.#dueAtMs.get(storageId) ?? Number.POSITIVE_INFINITY;
      const proposed = fromMs + state.intervalMs;
      this.#dueAtMs.set(storageId, current === Number.POSITIVE_INFINITY ? proposed : Math.min(current, proposed));
      this.#wake();
    }
  }

  async #lazyUpdate(se: StorageElementConfig, reason: string): Promise<void> {
    if (reason === 'insufficient_storage') await this.#o.cache.markFull(se.storage_id);
    const release = await this.#o.cache.tryLock(se.storage_id, this.#o.instanceId, this.#settings.lazyLockMs);
    if (!release) return; // another replica refreshes this SE right now
    try {
      if (this.isLeader && this.#dueAtMs.has(se.storage_id)) {
        const state = this.#states.get(se.storage_id);
        if (state) this.#states.set(se.storage_id, activityNoted(state, this.#settings));
        this.#dueAtMs.set(se.storage_id, Date.now());
        this.#wake();
        return;
      }
      // Follower (or leader between rounds): poll this one SE now, once, fenced by the cached term.
      const cached = (await this.#o.cache.readMany([se.storage_id])).get(se.storage_id);
      const term = this.term ?? cached?.term ?? 0;
      if (!this.#states.has(se.storage_id)) {
        // Start from what the cache knows, never healthier (a dead SE's one failure must not clear its unhealthy mark).
        const health = await this.#o.cache.readHealth(se.storage_id);
        this.#states.set(se.storage_id, seededPollState(this.#settings, cached, health));
      }
      await this.#pollAndStore(se, term, this.#closing.signal, 1);
      if (!this.isLeader) this.#states.delete(se.storage_id);
    } finally {
      await release();
    }
  }

  #updateAvailableGauge(): void {
    const counts: Record<string, number> = { edit: 0, rw: 0, ro: 0, ar: 0 };
    for (const state of this.#states.values()) {
      if (state.report && state.healthy && state.report.health !== 'unhealthy') {
        counts[state.report.mode] = (counts[state.report.mode] ?? 0) + 1;
      }
    }
    for (const [mode, count] of Object.entries(counts)) this.#metrics.storageAvailable.set({ mode }, count);
  }
}

function isWritable(c: StorageCandidate): boolean {
  return (
    c.reachable && c.health !== 'unhealthy' && WRITABLE_STORAGE_MODES.includes(c.mode) && c.full_marked_at === null
  );
}

function sameNumbers(a: CapacityReport, b: CapacityReport | undefined): boolean {
  return (
    !!b &&
    a.mode === b.mode &&
    a.health === b.health &&
    a.total === b.total &&
    a.used === b.used &&
    a.available === b.available &&
    a.reserved === b.reserved
  );
}

/**
 * Every given SE as a writable, reachable candidate with unknown room (sizes
 * `Number.MAX_SAFE_INTEGER`): used when no capacity is known yet, so the SEs'
 * own reservations decide (a 507 moves the file to the next one).
 */
export function blindCandidates(storageElements: readonly StorageElementConfig[]): StorageCandidate[] {
  return storageElements.map((se) => ({ ...blindEntry(se), reachable: true }));
}

function blindEntry(se: StorageElementConfig): Omit<StorageCandidate, 'reachable'> {
  return {
    storage_id: se.storage_id,
    mode: 'rw',
    total: Number.MAX_SAFE_INTEGER,
    used: 0,
    available: Number.MAX_SAFE_INTEGER,
    reserved: 0,
    percent_used: 0,
    health: 'healthy',
    backend: 'local',
    location: se.location,
    endpoint: se.endpoint,
    last_update: '',
    last_poll: '',
    term: 0,
    full_marked_at: null,
  };
}

import { ValidationError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../logging/index.ts';
import { type Clock, sleepOnClock, systemClock } from './clock.ts';
import { DEFAULT_RENEW_DEADLINE_RATIO, defaultRetryIntervalMs, RENEW_INTERVAL_RATIO } from './defaults.ts';
import { LeadershipError } from './errors.ts';
import { HeldLeadership, type Leadership, type LeadershipTransition } from './held-leadership.ts';
import { assertKey, assertTtlMs, type TtlStore } from './ttl-store.ts';

export type { Leadership, LeadershipTransition } from './held-leadership.ts';

/** Options of {@link Elections}. */
export interface ElectionsOptions {
  /** Time source for renewals and deadlines. @defaultValue systemClock */
  clock?: Clock;
  /** @defaultValue silentLogger */
  logger?: Logger;
  /**
   * Fraction of the lease, counted from the send time of the last confirmed
   * renewal (or of the acquisition), after which a leader whose renewals are
   * not confirmed gives up. Must be in (1/3, 1]. @defaultValue 2/3
   */
  renewDeadlineRatio?: number;
  /**
   * Called synchronously on every acquisition, renewal, loss and release
   * (for metrics such as the seed's `leader_transitions_total` and
   * `leader_lock_acquisition_duration_seconds`). A throwing hook is logged and ignored.
   */
  onTransition?: (transition: LeadershipTransition) => void;
}

/** Options of {@link Elections.campaign}. */
export interface CampaignOptions {
  /** Aborting it ends the campaign; `campaign` then rejects with a `campaign_aborted` error. */
  signal?: AbortSignal;
  /** Milliseconds between attempts. @defaultValue lease/10, at least 10 */
  retryIntervalMs?: number;
  /** Milliseconds between renewals once won (see {@link Elections.acquire}). @defaultValue lease/3 */
  renewIntervalMs?: number;
}

/**
 * Leader election over a {@link TtlStore} (the `IElections` of seed
 * vvm-orchestration.md): one instance per store and process.
 *
 * - `acquire` inserts `key = value` with a TTL of `leaseMs`; the insert's
 *   term is the leadership's fencing token.
 * - The holder renews every lease/3 by compare-and-swap of its own value.
 *   A swap that finds another value (or none) loses leadership at once. A
 *   swap that throws is retried; if no renewal is confirmed within
 *   `renewDeadlineRatio × lease` after the last confirmed one was sent, the
 *   leadership is lost. Because the store's TTL started no earlier than that
 *   send, the leader stops believing before the store can let another in.
 * - Loss aborts `leadership.signal` with a {@link LeadershipError}.
 * - `release()` is compare-and-delete, so a follower can take over at once.
 *
 * Values must identify one contender instance (e.g. `host:pid:uuid`): two
 * contenders with the same value would renew each other's records.
 */
export class Elections {
  readonly #store: TtlStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #renewDeadlineRatio: number;
  readonly #held = new Set<HeldLeadership>();
  readonly #closing = new AbortController();
  readonly #onTransition: ((transition: LeadershipTransition) => void) | undefined;

  /** @throws ValidationError `elections_invalid_option` for a ratio outside (1/3, 1]. */
  constructor(store: TtlStore, options: ElectionsOptions = {}) {
    this.#store = store;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#renewDeadlineRatio = options.renewDeadlineRatio ?? DEFAULT_RENEW_DEADLINE_RATIO;
    this.#onTransition = options.onTransition;
    if (!(this.#renewDeadlineRatio > RENEW_INTERVAL_RATIO && this.#renewDeadlineRatio <= 1)) {
      throw new ValidationError(
        'elections_invalid_option',
        `renewDeadlineRatio must be in (1/3, 1], got ${this.#renewDeadlineRatio}`,
      );
    }
  }

  /** The leaderships this instance holds now. */
  get held(): readonly Leadership[] {
    return [...this.#held];
  }

  /**
   * One attempt to become leader of `key`.
   *
   * @param key - the election's key in the store.
   * @param value - this contender's identity (unique per contender instance).
   * @param leaseMs - lease (the record's TTL) in milliseconds, a positive integer.
   * @param options.renewIntervalMs - time between renewals. @defaultValue lease/3
   * @returns the leadership, or `null` when another contender holds the key.
   * @throws ValidationError for bad arguments (a renew interval not below the renew deadline); LeadershipError `elections_closed`
   *   after {@link close}; whatever the store throws when it cannot be reached.
   */
  async acquire(
    key: string,
    value: string,
    leaseMs: number,
    options: { renewIntervalMs?: number } = {},
  ): Promise<Leadership | null> {
    assertKey(key);
    assertKey(value, 'value');
    assertTtlMs(leaseMs, 'leaseMs');
    const renewDeadlineMs = Math.floor(leaseMs * this.#renewDeadlineRatio);
    const renewIntervalMs = options.renewIntervalMs ?? Math.floor(leaseMs * RENEW_INTERVAL_RATIO);
    if (!(Number.isFinite(renewIntervalMs) && renewIntervalMs > 0 && renewIntervalMs < renewDeadlineMs)) {
      throw new ValidationError(
        'elections_invalid_option',
        `renewIntervalMs must be positive and below the renew deadline (${renewDeadlineMs} ms for a ${leaseMs} ms lease), got ${renewIntervalMs}`,
      );
    }
    this.#assertOpen(key);
    const sentAtMs = this.#clock.now();
    const term = await this.#store.insertIfNotExists(key, value, leaseMs);
    if (term === null) return null;
    const leadership = new HeldLeadership({
      store: this.#store,
      clock: this.#clock,
      logger: this.#logger,
      key,
      value,
      term,
      leaseMs,
      renewIntervalMs,
      renewDeadlineMs,
      acquiredSentAtMs: sentAtMs,
      onEnd: (held) => this.#held.delete(held),
      notify: (transition) => this.#notify(transition),
    });
    this.#held.add(leadership);
    if (this.#closing.signal.aborted) {
      await leadership.release();
      this.#assertOpen(key);
    }
    this.#logger.info({ key, term, leaseMs }, 'leadership acquired');
    this.#notify({ kind: 'acquired', key, value, term, durationMs: this.#clock.now() - sentAtMs });
    return leadership;
  }

  /**
   * Tries to acquire `key` until it wins (what followers do): an attempt
   * every `retryIntervalMs`; store errors are logged and retried.
   *
   * @returns the leadership once won.
   * @throws LeadershipError `campaign_aborted` when `options.signal` is aborted
   *   (its reason is the `cause`), `elections_closed` after {@link close};
   *   ValidationError for bad arguments.
   */
  async campaign(key: string, value: string, leaseMs: number, options: CampaignOptions = {}): Promise<Leadership> {
    assertKey(key);
    assertKey(value, 'value');
    assertTtlMs(leaseMs, 'leaseMs');
    const retryIntervalMs = options.retryIntervalMs ?? defaultRetryIntervalMs(leaseMs);
    assertTtlMs(retryIntervalMs, 'retryIntervalMs');
    const signal = options.signal ? AbortSignal.any([options.signal, this.#closing.signal]) : this.#closing.signal;
    // A release notice (the store's watchReleases, when it has one) ends the wait at once: graceful hand-over
    // takes a round trip instead of up to one retry interval.
    let wake = new AbortController();
    const unwatch = this.#store.watchReleases?.(key, () => wake.abort());
    try {
      for (;;) {
        this.#assertOpen(key);
        this.#assertNotAborted(key, options.signal);
        if (wake.signal.aborted) wake = new AbortController();
        try {
          const leadership = await this.#acquireUnlessAborted(key, value, leaseMs, signal, options.renewIntervalMs);
          if (leadership) return leadership;
        } catch (error) {
          if (error instanceof ValidationError || error instanceof LeadershipError) throw error;
          this.#logger.warn({ key, err: error }, 'campaign: store unreachable, retrying');
        }
        try {
          await sleepOnClock(this.#clock, retryIntervalMs, AbortSignal.any([signal, wake.signal]));
        } catch {
          // aborted or woken by a release: the checks at the top of the loop throw the right error
        }
      }
    } finally {
      unwatch?.();
    }
  }

  /** Releases every leadership this instance holds; never throws (failures are logged). */
  async cleanup(): Promise<void> {
    const results = await Promise.allSettled([...this.#held].map((held) => held.release()));
    for (const result of results) {
      if (result.status === 'rejected') this.#logger.warn({ err: result.reason }, 'cleanup: release failed');
    }
  }

  /** Ends running campaigns, releases everything and refuses new acquisitions. Does not close the store's client. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.cleanup();
  }

  /** An acquire attempt that gives up waiting when `signal` aborts, releasing a late win. */
  async #acquireUnlessAborted(
    key: string,
    value: string,
    leaseMs: number,
    signal: AbortSignal,
    renewIntervalMs: number | undefined,
  ): Promise<Leadership | null> {
    const attempt = this.acquire(key, value, leaseMs, renewIntervalMs === undefined ? {} : { renewIntervalMs });
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([attempt, aborted]);
      if (outcome === 'aborted') {
        attempt.then((late) => late?.release()).catch(() => undefined);
        return null;
      }
      return outcome;
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  #notify(transition: LeadershipTransition): void {
    if (!this.#onTransition) return;
    try {
      this.#onTransition(transition);
    } catch (error) {
      this.#logger.warn({ err: error, transition }, 'onTransition hook threw');
    }
  }

  #assertOpen(key: string): void {
    if (this.#closing.signal.aborted) {
      throw new LeadershipError('elections_closed', 'this Elections instance is closed', { key, retriable: false });
    }
  }

  #assertNotAborted(key: string, signal: AbortSignal | undefined): void {
    if (signal?.aborted) {
      throw new LeadershipError('campaign_aborted', `campaign for ${key} aborted`, {
        key,
        retriable: false,
        cause: signal.reason,
      });
    }
  }
}

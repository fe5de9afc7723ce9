import type { Logger } from '../logging/index.ts';
import type { Clock } from './clock.ts';
import { LeadershipError } from './errors.ts';
import type { TtlStore } from './ttl-store.ts';

/** A leadership won by `Elections.acquire` or `Elections.campaign`. */
export interface Leadership {
  /** The election's key. */
  readonly key: string;
  /** This contender's value, as stored. */
  readonly value: string;
  /**
   * Fencing token: strictly greater than the term of every earlier
   * leadership of this key. Pass it with every write the leader makes, and
   * have the written system refuse terms lower than one it has seen.
   */
  readonly term: number;
  /** The lease in milliseconds. */
  readonly leaseMs: number;
  /** Aborted when leadership ends; `reason` is a `LeadershipError` saying why. */
  readonly signal: AbortSignal;
  /**
   * Whether this process may still act as leader now: not ended, and the
   * renew deadline has not passed on the local clock. Cheaper and stricter
   * than the signal, which a blocked event loop can only abort late; call it
   * right before a write that only the leader may make (and pass `term`).
   */
  holds(): boolean;
  /**
   * Stops renewing and deletes the record if it still holds this value
   * (compare-and-delete), so a follower can take over at once. Idempotent:
   * later calls wait for the first and answer false.
   * @returns whether the store record was deleted by this call.
   * @throws whatever the store throws; the record then expires with its lease.
   */
  release(): Promise<boolean>;
}

/** What happened to a leadership; see `ElectionsOptions.onTransition`. */
export interface LeadershipTransition {
  kind: 'acquired' | 'renewed' | 'lost' | 'released';
  key: string;
  value: string;
  term: number;
  /** Round trip of the store call behind the transition in ms (acquired, renewed). */
  durationMs?: number;
  /** Why it ended (lost, released). */
  code?: LeadershipError['code'];
}

interface HeldLeadershipInit {
  store: TtlStore;
  clock: Clock;
  logger: Logger;
  key: string;
  value: string;
  term: number;
  leaseMs: number;
  /** Time between renewals (lease/3 unless the caller says). */
  renewIntervalMs: number;
  renewDeadlineMs: number;
  acquiredSentAtMs: number;
  onEnd: (held: HeldLeadership) => void;
  notify: (transition: LeadershipTransition) => void;
}

type Attempt = { ok: true; swapped: boolean } | { ok: false; error: unknown };

/**
 * The renewal loop of one leadership. Internal to `Elections`.
 *
 * Timeline, all on the injected clock: the last confirmed renewal was sent
 * at `t`; the next is sent at `t + lease/3`; a failed renewal is retried
 * lease/20 after it failed, one attempt at a time, never later than the
 * deadline; at `t + renewDeadline` with nothing confirmed, the leadership is
 * lost (`leadership_renew_timeout`) and a best-effort compare-and-delete is
 * sent so the record does not outlive us if a late renewal lands.
 *
 * The deadline is its own timer, re-armed by every confirmed renewal and
 * independent of the attempts: however the store fails (rejecting at once,
 * hanging, answering slowly), nothing but a confirmed renewal can move it,
 * so the loss is signalled at the deadline. (Racing each attempt against a
 * 0 ms deadline timer is not enough: a store that rejects at once settles in
 * a microtask and always wins, and the retry loop then spins on the deadline.)
 */
export class HeldLeadership implements Leadership {
  readonly key: string;
  readonly value: string;
  readonly term: number;
  readonly leaseMs: number;
  readonly #init: HeldLeadershipInit;
  readonly #controller = new AbortController();
  #deadlineMs: number;
  #cancelTimer: () => void = () => undefined;
  #cancelDeadline: () => void = () => undefined;
  #ended = false;
  #releasing: Promise<boolean> | undefined;

  constructor(init: HeldLeadershipInit) {
    this.#init = init;
    this.key = init.key;
    this.value = init.value;
    this.term = init.term;
    this.leaseMs = init.leaseMs;
    this.#deadlineMs = init.acquiredSentAtMs + init.renewDeadlineMs;
    this.#armDeadline();
    this.#schedule(init.acquiredSentAtMs + init.renewIntervalMs);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  holds(): boolean {
    return !this.#ended && this.#init.clock.now() < this.#deadlineMs;
  }

  release(): Promise<boolean> {
    if (this.#releasing) return this.#releasing.then(() => false);
    this.#releasing = this.#release();
    return this.#releasing;
  }

  async #release(): Promise<boolean> {
    if (this.#ended) return false;
    this.#end(new LeadershipError('leadership_released', `leadership of ${this.key} released`, this.#details(false)));
    const deleted = await this.#init.store.compareAndDelete(this.key, this.value);
    this.#init.logger.info({ key: this.key, term: this.term, deleted }, 'leadership released');
    return deleted;
  }

  #schedule(atMs: number): void {
    const { clock } = this.#init;
    this.#cancelTimer = clock.setTimer(() => void this.#renew(), atMs - clock.now());
  }

  /**
   * (Re)arms the timer that ends the leadership at `#deadlineMs`. When it
   * fires, no renewal was confirmed in time (a confirmed one re-arms it). A
   * timer may fire a little before its due time on the clock's scale (Node's
   * timers run on libuv's millisecond loop time, `performance.now()` does
   * not): giving up up to a millisecond early is safe, re-arming could loop.
   */
  #armDeadline(): void {
    const { clock } = this.#init;
    this.#cancelDeadline();
    this.#cancelDeadline = clock.setTimer(
      () => this.#lose('leadership_renew_timeout', `no renewal of ${this.key} confirmed within the renew deadline`),
      this.#deadlineMs - clock.now(),
    );
  }

  async #renew(): Promise<void> {
    if (this.#ended) return;
    const { clock, store, leaseMs } = this.#init;
    const sentAtMs = clock.now();
    if (sentAtMs >= this.#deadlineMs) {
      // This timer fired late (blocked event loop, suspended process): the lease may be gone already.
      this.#lose('leadership_renew_timeout', `renewal of ${this.key} started after the renew deadline`);
      return;
    }
    const attempt: Attempt = await store.compareAndSwap(this.key, this.value, this.value, leaseMs).then(
      (swapped) => ({ ok: true, swapped }),
      (error: unknown) => ({ ok: false, error }),
    );
    // Ended meanwhile: released, or the deadline timer fired while this attempt was in flight.
    if (this.#ended) return;
    if (!attempt.ok) {
      const retryAtMs = clock.now() + Math.max(1, leaseMs / 20);
      if (retryAtMs < this.#deadlineMs) {
        this.#init.logger.warn({ key: this.key, term: this.term, err: attempt.error }, 'renewal failed, retrying');
        this.#schedule(retryAtMs);
      } else {
        // No time for another attempt: the deadline timer ends the leadership.
        this.#init.logger.warn({ key: this.key, term: this.term, err: attempt.error }, 'renewal failed');
      }
      return;
    }
    if (!attempt.swapped) {
      this.#lose('leadership_lost', `the store no longer holds this leader's value for ${this.key}`);
      return;
    }
    this.#deadlineMs = sentAtMs + this.#init.renewDeadlineMs;
    this.#armDeadline();
    this.#notify('renewed', { durationMs: clock.now() - sentAtMs });
    this.#schedule(sentAtMs + this.#init.renewIntervalMs);
  }

  #lose(code: 'leadership_lost' | 'leadership_renew_timeout', message: string): void {
    if (this.#ended) return;
    this.#init.logger.warn({ key: this.key, term: this.term, code }, 'leadership lost');
    this.#end(new LeadershipError(code, message, this.#details(true)));
    if (code === 'leadership_renew_timeout') {
      // Best effort: if a delayed renewal lands later, this (sent after it) removes the record again.
      this.#init.store.compareAndDelete(this.key, this.value).catch(() => undefined);
    }
  }

  #end(reason: LeadershipError): void {
    this.#ended = true;
    this.#cancelTimer();
    this.#cancelDeadline();
    this.#init.onEnd(this);
    this.#controller.abort(reason);
    this.#notify(reason.code === 'leadership_released' ? 'released' : 'lost', { code: reason.code });
  }

  #notify(kind: LeadershipTransition['kind'], extra: Pick<LeadershipTransition, 'durationMs' | 'code'>): void {
    this.#init.notify({ kind, key: this.key, value: this.value, term: this.term, ...extra });
  }

  #details(retriable: boolean): { key: string; term: number; retriable: boolean } {
    return { key: this.key, term: this.term, retriable };
  }
}

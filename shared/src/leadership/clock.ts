/**
 * Time as the leadership code sees it: a monotonic `now()` in milliseconds
 * and one-shot timers. Production uses {@link systemClock}; tests inject a
 * {@link ManualClock} and move time forward on purpose, so that leases,
 * renewals and kill thresholds can be tested without sleeping.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (not wall time; only differences matter). */
  now(): number;
  /**
   * Calls `callback` once after `delayMs` milliseconds.
   * @returns a function that cancels the timer (idempotent).
   */
  setTimer(callback: () => void, delayMs: number): () => void;
}

/** The real clock: `performance.now()` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer(callback, delayMs) {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    return () => clearTimeout(handle);
  },
};

/**
 * Resolves after `delayMs` on `clock`, or rejects with `signal.reason` as soon
 * as `signal` is aborted (at once if it already is).
 */
export function sleepOnClock(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface ManualTimer {
  readonly dueMs: number;
  readonly seq: number;
  readonly callback: () => void;
}

/** Lets every pending promise continuation run (one macrotask turn, twice). */
async function settle(): Promise<void> {
  for (let i = 0; i < 2; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in
 * order, setting `now()` to each timer's due time first and letting promise
 * chains settle after each, so code that awaits an in-memory store between
 * timers behaves as it would in real time.
 */
export class ManualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  #timers: ManualTimer[] = [];

  /** @param startMs - the initial reading of `now()`. @defaultValue 0 */
  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  setTimer(callback: () => void, delayMs: number): () => void {
    const timer: ManualTimer = { dueMs: this.#nowMs + Math.max(0, delayMs), seq: this.#seq++, callback };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Number of timers not fired yet (for tests that check for leaks). */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /**
   * Moves time forward by `deltaMs`, firing every timer that falls due on the
   * way (including timers those callbacks set), then settles pending promises.
   */
  async advance(deltaMs: number): Promise<void> {
    if (!(deltaMs >= 0)) throw new RangeError(`ManualClock.advance: deltaMs must be >= 0, got ${deltaMs}`);
    const targetMs = this.#nowMs + deltaMs;
    await settle();
    for (;;) {
      const next = this.#nextDue(targetMs);
      if (!next) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#nowMs = Math.max(this.#nowMs, next.dueMs);
      next.callback();
      await settle();
    }
    this.#nowMs = targetMs;
    await settle();
  }

  #nextDue(limitMs: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (t.dueMs > limitMs) continue;
      if (!best || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

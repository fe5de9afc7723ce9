import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The least time `waitFor` waits before it gives up, in milliseconds. Its
 * timeout guards against a hang; it is not a speed requirement: on a loaded
 * 2-core host (load 20–40 seen) an event that takes 1 s on a quiet one can
 * take a minute. Below vitest's testTimeout, so the message names what hung.
 */
export const WAIT_FOR_MIN_TIMEOUT_MS = 120_000;

export interface WaitForOptions {
  /**
   * Give up after this many milliseconds, but never before
   * `WAIT_FOR_MIN_TIMEOUT_MS` unless `exact` is set. @defaultValue 120000
   */
  timeoutMs?: number;
  /** Give up after exactly `timeoutMs` (when the caller handles the timeout itself). */
  exact?: boolean;
  /** Pause between attempts, in milliseconds. @defaultValue 50 */
  intervalMs?: number;
  /** Says what was awaited, for the timeout error. */
  message?: string;
  /** Stops waiting (rejects with the signal's reason). */
  signal?: AbortSignal;
}

/**
 * Calls `condition` until it returns a value other than `false`, `null` or
 * `undefined` without throwing, and returns that value. Replaces sleeps in tests.
 *
 * @throws Error after `timeoutMs`, naming `message`, with the last error
 *   `condition` threw (if any) as `cause`.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<Exclude<T, false | null | undefined>> {
  const { intervalMs = 50, message = 'condition', signal } = options;
  const timeoutMs = options.exact
    ? (options.timeoutMs ?? WAIT_FOR_MIN_TIMEOUT_MS)
    : Math.max(options.timeoutMs ?? 0, WAIT_FOR_MIN_TIMEOUT_MS);
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const value = await condition();
      if (value !== false && value !== null && value !== undefined)
        return value as Exclude<T, false | null | undefined>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    const left = deadline - performance.now();
    if (left <= 0) {
      const why = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      throw new Error(`waitFor: ${message} not met within ${timeoutMs} ms${why}`, { cause: lastError });
    }
    await sleep(Math.min(intervalMs, left), undefined, { signal });
  }
}

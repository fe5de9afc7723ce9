import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  /** Give up after this many milliseconds. @defaultValue 5000 */
  timeoutMs?: number;
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
  const { timeoutMs = 5_000, intervalMs = 50, message = 'condition', signal } = options;
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

import { setTimeout as sleep } from 'node:timers/promises';

export interface PollOptions {
  /** Give up after this many milliseconds. */
  timeoutMs: number;
  /** Pause between attempts, in milliseconds. @defaultValue 250 */
  intervalMs?: number;
  /** Stops waiting early (rejects with the signal's reason). */
  signal?: AbortSignal;
}

/**
 * Calls `attempt` until it returns true or `timeoutMs` has passed.
 *
 * @returns true when an attempt succeeded, false on timeout.
 * @throws the signal's reason when aborted; whatever `attempt` throws.
 */
export async function pollUntil(attempt: () => Promise<boolean>, options: PollOptions): Promise<boolean> {
  const { timeoutMs, intervalMs = 250, signal } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
    if (await attempt()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())), undefined, { signal });
  }
}

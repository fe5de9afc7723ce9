import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `condition` until it returns a truthy value or `timeoutMs` passes.
 * Local stand-in until test/support's `waitFor` lands; same signature.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  {
    timeoutMs = 10_000,
    intervalMs = 25,
    message = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`waitFor: ${message} not met within ${timeoutMs} ms`, { cause: last });
    }
    await sleep(intervalMs);
  }
}

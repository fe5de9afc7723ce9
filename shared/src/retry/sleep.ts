import { PolyvisionError } from '../errors/index.ts';

/**
 * Waits `ms` milliseconds, or rejects at once with `aborted` (the signal's
 * reason as cause) when `signal` aborts. The timer is cleared on abort.
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The error raised when an operation stops because its AbortSignal fired (code `aborted`, not retriable). */
export function abortError(signal: AbortSignal): PolyvisionError {
  return new PolyvisionError('aborted', 'the operation was aborted', { cause: signal.reason, httpStatus: 499 });
}

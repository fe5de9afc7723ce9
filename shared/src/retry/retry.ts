import { z } from 'zod';
import { isRetriable as defaultIsRetriable, PolyvisionError } from '../errors/index.ts';
import { backoffDelayMs } from './backoff.ts';
import { abortableSleep, abortError } from './sleep.ts';

/** Options of {@link retry}. */
export interface RetryOptions {
  /** Total tries, the first one included (1 = no retry). @defaultValue 5 */
  attempts?: number;
  /** Delay ceiling before the first retry, in ms. @defaultValue 100 */
  baseDelayMs?: number;
  /** Cap on any single delay, in ms. @defaultValue 10_000 */
  maxDelayMs?: number;
  /** Growth factor of the ceiling per retry. @defaultValue 2 */
  factor?: number;
  /** `'full'` (AWS full jitter) or `'none'`. @defaultValue 'full' */
  jitter?: 'full' | 'none';
  /** Stops the retries and any wait at once; the call rejects with code `aborted`. */
  signal?: AbortSignal;
  /** Which errors are worth another try. @defaultValue isRetriable from shared/errors (PolyvisionError.retriable) */
  isRetriable?: (error: unknown) => boolean;
  /** Called before each wait, e.g. to log. */
  onRetry?: (info: { error: unknown; attempt: number; delayMs: number }) => void;
  /**
   * Wait at least the peer's `Retry-After` when the error carries one
   * (`details.retry_after_ms`, set by the HTTP client for 429 and 503), still
   * capped by `maxDelayMs`. @defaultValue true
   */
  honorRetryAfter?: boolean;
  /** Uniform random source in [0, 1), injectable for tests. @defaultValue Math.random */
  random?: () => number;
}

const DEFAULTS = Object.freeze({
  attempts: 5,
  baseDelayMs: 100,
  maxDelayMs: 10_000,
  factor: 2,
  jitter: 'full' as const,
});

const optionsSchema = z.object({
  attempts: z.number().int().min(1).max(1000),
  baseDelayMs: z.number().min(0),
  maxDelayMs: z.number().min(0),
  factor: z.number().min(1),
  jitter: z.enum(['full', 'none']),
});

/** Fills and validates retry options; throws `invalid_retry_options` on nonsense (attempts < 1, negative delays). */
export function compileRetryOptions(options: RetryOptions = {}) {
  const merged = {
    attempts: options.attempts ?? DEFAULTS.attempts,
    baseDelayMs: options.baseDelayMs ?? DEFAULTS.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULTS.maxDelayMs,
    factor: options.factor ?? DEFAULTS.factor,
    jitter: options.jitter ?? DEFAULTS.jitter,
  };
  const parsed = optionsSchema.safeParse(merged);
  if (!parsed.success) {
    throw new PolyvisionError('invalid_retry_options', `invalid retry options: ${parsed.error.issues[0]?.message}`, {
      details: { path: parsed.error.issues[0]?.path.join('.') },
    });
  }
  return parsed.data;
}

/** `details.retry_after_ms` of a PolyvisionError, else 0. */
function retryAfterMsOf(error: unknown): number {
  const value = error instanceof PolyvisionError ? error.details.retry_after_ms : undefined;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * Runs `fn` until it succeeds, retrying only errors that `isRetriable`
 * accepts, waiting between tries with capped exponential backoff and full
 * jitter (see {@link backoffDelayMs}; AWS Architecture Blog, "Exponential
 * Backoff and Jitter"). A peer's `Retry-After` (see `honorRetryAfter`) raises
 * the wait to at least what it asked, up to `maxDelayMs`.
 *
 * @param fn - the operation; receives the attempt number (1-based) and the signal.
 * @returns what `fn` returns.
 * @throws the error of `fn` unchanged when it is not retriable;
 *   PolyvisionError `retries_exhausted` (retriable, same httpStatus, last error as `cause`)
 *   when every attempt failed with a retriable error;
 *   PolyvisionError `aborted` when the signal aborts (before a try or during a wait).
 */
export async function retry<T>(
  fn: (attempt: number, signal: AbortSignal | undefined) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const compiled = compileRetryOptions(options);
  const shouldRetry = options.isRetriable ?? defaultIsRetriable;
  const { signal } = options;
  let lastError: unknown;
  for (let attempt = 1; attempt <= compiled.attempts; attempt++) {
    if (signal?.aborted) throw abortError(signal);
    try {
      return await fn(attempt, signal);
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      if (!shouldRetry(error)) throw error;
      lastError = error;
      if (attempt === compiled.attempts) break;
      const delayMs = Math.max(
        backoffDelayMs(attempt - 1, compiled, options.random),
        options.honorRetryAfter === false ? 0 : Math.min(retryAfterMsOf(error), compiled.maxDelayMs),
      );
      options.onRetry?.({ error, attempt, delayMs });
      await abortableSleep(delayMs, signal);
    }
  }
  const last = lastError instanceof PolyvisionError ? lastError : undefined;
  throw new PolyvisionError(
    'retries_exhausted',
    `gave up after ${compiled.attempts} attempts: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
    {
      retriable: true,
      cause: lastError,
      httpStatus: last?.httpStatus ?? 503,
      details: { attempts: compiled.attempts, last_code: last?.code ?? 'unknown' },
    },
  );
}

import { describe, expect, it } from 'vitest';
import { backoffDelayMs, PolyvisionError, retry } from '../src/index.ts';

const transient = () => new PolyvisionError('http_unavailable', 'peer down', { retriable: true });

describe('backoffDelayMs (AWS full jitter)', () => {
  const options = { baseDelayMs: 100, maxDelayMs: 1_000, factor: 2, jitter: 'full' as const };

  it('grows exponentially and stops at the cap', () => {
    const ceilings = [0, 1, 2, 3, 4, 10].map((i) => backoffDelayMs(i, { ...options, jitter: 'none' }));
    expect(ceilings).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('draws uniformly between 0 and the ceiling', () => {
    expect(backoffDelayMs(2, options, () => 0)).toBe(0);
    expect(backoffDelayMs(2, options, () => 0.999_999)).toBe(400);
    expect(backoffDelayMs(2, options, () => 0.5)).toBe(200);
    const draws = Array.from({ length: 2_000 }, () => backoffDelayMs(20, options));
    expect(Math.max(...draws)).toBeLessThanOrEqual(1_000);
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(mean).toBeGreaterThan(400);
    expect(mean).toBeLessThan(600);
  });
});

describe('retry', () => {
  it('retries retriable errors until success and returns the value', async () => {
    const seen: number[] = [];
    const value = await retry(
      async (attempt) => {
        seen.push(attempt);
        if (attempt < 3) throw transient();
        return 'ok';
      },
      { attempts: 5, baseDelayMs: 1 },
    );
    expect(value).toBe('ok');
    expect(seen).toEqual([1, 2, 3]);
  });

  it('gives up after `attempts`, keeping the last error as cause', async () => {
    let calls = 0;
    const errors: PolyvisionError[] = [];
    const failure = await retry(
      async () => {
        calls++;
        const error = new PolyvisionError('http_unavailable', `down #${calls}`, { retriable: true, httpStatus: 502 });
        errors.push(error);
        throw error;
      },
      { attempts: 4, baseDelayMs: 1 },
    ).catch((e: unknown) => e);
    expect(calls).toBe(4);
    expect(failure).toBeInstanceOf(PolyvisionError);
    expect(failure).toMatchObject({ code: 'retries_exhausted', retriable: true, httpStatus: 502 });
    expect((failure as PolyvisionError).cause).toBe(errors[3]);
    expect((failure as PolyvisionError).details).toMatchObject({ attempts: 4, last_code: 'http_unavailable' });
  });

  it('does not retry non-retriable errors and throws them unchanged', async () => {
    let calls = 0;
    const fatal = new PolyvisionError('http_rejected', 'bad request');
    const plain = new Error('boom');
    await expect(
      retry(async () => {
        calls++;
        throw fatal;
      }),
    ).rejects.toBe(fatal);
    await expect(
      retry(async () => {
        calls++;
        throw plain;
      }),
    ).rejects.toBe(plain);
    expect(calls).toBe(2);
  });

  it('accepts a custom isRetriable', async () => {
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls++;
          throw new Error('flaky');
        },
        { attempts: 3, baseDelayMs: 1, isRetriable: (e) => e instanceof Error && e.message === 'flaky' },
      ),
    ).rejects.toMatchObject({ code: 'retries_exhausted' });
    expect(calls).toBe(3);
  });

  it('waits the capped backoff between tries', async () => {
    const delays: number[] = [];
    const startedAt = performance.now();
    await retry(
      async (attempt) => {
        if (attempt < 4) throw transient();
      },
      {
        attempts: 4,
        baseDelayMs: 20,
        maxDelayMs: 50,
        jitter: 'none',
        onRetry: ({ delayMs }) => delays.push(delayMs),
      },
    );
    expect(delays).toEqual([20, 40, 50]);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(105);
  });

  it("waits at least the peer's Retry-After, capped by maxDelayMs", async () => {
    const delays: number[] = [];
    const limited = () =>
      new PolyvisionError('http_rate_limited', 'slow down', { retriable: true, details: { retry_after_ms: 80 } });
    await retry(
      async (attempt) => {
        if (attempt < 3) throw limited();
      },
      { baseDelayMs: 1, maxDelayMs: 60, onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    expect(delays).toEqual([60, 60]);
    delays.length = 0;
    await retry(
      async (attempt) => {
        if (attempt < 2) throw limited();
      },
      { baseDelayMs: 1, jitter: 'none', honorRetryAfter: false, onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    expect(delays).toEqual([1]);
  });

  it('stops waiting at once when aborted', async () => {
    const controller = new AbortController();
    let calls = 0;
    // A one-hour backoff: settling within the test at all shows the abort ended the wait.
    const pending = retry(
      async () => {
        calls++;
        throw transient();
      },
      { attempts: 10, baseDelayMs: 3_600_000, jitter: 'none', signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error('shutdown')), 30);
    await expect(pending).rejects.toMatchObject({ code: 'aborted' });
    expect(calls).toBe(1);
  });

  it('does not start when the signal is already aborted', async () => {
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls++;
        },
        { signal: AbortSignal.abort() },
      ),
    ).rejects.toMatchObject({ code: 'aborted' });
    expect(calls).toBe(0);
  });

  it('rejects nonsense options with a code', async () => {
    await expect(retry(async () => 1, { attempts: 0 })).rejects.toMatchObject({ code: 'invalid_retry_options' });
    await expect(retry(async () => 1, { baseDelayMs: -1 })).rejects.toMatchObject({ code: 'invalid_retry_options' });
  });
});

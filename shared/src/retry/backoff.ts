/**
 * Exponential backoff with "full jitter", as described in the AWS
 * Architecture Blog post "Exponential Backoff and Jitter" (Marc Brooker,
 * 2015, https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/):
 *
 *     ceiling = min(maxDelayMs, baseDelayMs × factor^attempt)
 *     delay   = random_between(0, ceiling)          (full jitter)
 *
 * Full jitter spreads competing clients over the whole window, which the
 * post shows gives the least total work and the fewest collisions.
 */
export interface BackoffOptions {
  /** Delay ceiling for the first retry, in ms. */
  baseDelayMs: number;
  /** Cap on any single delay, in ms. */
  maxDelayMs: number;
  /** Growth factor per attempt. */
  factor: number;
  /** `'full'` draws uniformly in [0, ceiling]; `'none'` waits exactly the ceiling. */
  jitter: 'full' | 'none';
}

/**
 * The delay before retry number `retryIndex` (0 for the first retry), in ms.
 *
 * @param random - a source of uniform numbers in [0, 1); injectable for tests.
 */
export function backoffDelayMs(
  retryIndex: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * options.factor ** retryIndex);
  if (options.jitter === 'none') return ceiling;
  return Math.floor(random() * (ceiling + 1));
}

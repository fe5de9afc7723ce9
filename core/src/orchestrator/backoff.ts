/**
 * Delay before retry number `retryNumber` (1 for the first retry) of a stage:
 * `initialMs × coefficient^(retryNumber−1)`, capped at `maxMs`. Temporal's
 * default retry policy (initial interval 1 s, backoff coefficient 2.0,
 * maximum interval 100 × initial) — docs.temporal.io, "Retry Policies".
 * No jitter: a retry is one task per stage, not a thundering herd.
 */
export function stageRetryDelayMs(
  retryNumber: number,
  policy: { initialMs: number; coefficient: number; maxMs: number },
): number {
  const exponent = Math.max(0, retryNumber - 1);
  return Math.min(policy.maxMs, Math.round(policy.initialMs * policy.coefficient ** exponent));
}

/**
 * Leadership timing defaults, measured in `bench/leadership/failover.ts`
 * (see bench/README.md, section "Leader failover").
 *
 * - Lease 5 s: a crashed leader is replaced after ≈ lease + one retry
 *   interval (≈ 5.3 s median), against ≈ 15–17 s for Kubernetes client-go
 *   defaults and ≈ 30 s for the seed's 30 s lock TTL.
 * - Renew every lease/3 (seed ADR-006, client-go does the same order).
 * - A leader gives up when no renewal is confirmed within 3/4 of the lease
 *   after the last confirmed renewal was sent; the runner's kill threshold is
 *   lease/4; 3/4 + 1/4 = 1 lease, so a stuck leader is gone before any other
 *   contender can acquire. Worst-case stall tolerated without losing
 *   leadership: 3/4 − 1/3 = 5/12 of the lease ≈ 2.1 s at 5 s, which absorbs
 *   a 1 s Redis stall with margin (2 s would tolerate only 0.83 s).
 * - Followers retry every lease/10 (500 ms at 5 s): graceful hand-over
 *   (release by compare-and-delete) takes about half of that.
 */
export const DEFAULT_LEASE_MS = 5_000;

/** Fraction of the lease between renewals. */
export const RENEW_INTERVAL_RATIO = 1 / 3;

/** Fraction of the lease, counted from the last confirmed renewal's send time, after which an unconfirmed leader gives up. */
export const DEFAULT_RENEW_DEADLINE_RATIO = 3 / 4;

/** Fraction of the lease a runner's services get to stop after a loss before the kill hook runs (seed vvm-orchestration.md). */
export const KILL_THRESHOLD_RATIO = 1 / 4;

/** Default follower retry interval for a lease: lease/10, at least 10 ms. */
export function defaultRetryIntervalMs(leaseMs: number): number {
  return Math.max(10, Math.round(leaseMs / 10));
}

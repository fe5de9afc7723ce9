/**
 * Leadership timing defaults, measured in `bench/leadership/failover.ts`
 * (see bench/README.md, section "Leader failover").
 *
 * - Lease 5 s: a crashed leader is replaced after ≈ lease + one retry
 *   interval (≈ 5.3 s median), against ≈ 15–17 s for Kubernetes client-go
 *   defaults and ≈ 30 s for the seed's 30 s lock TTL.
 * - Renew every lease/3 (seed ADR-006, client-go does the same order).
 * - A leader gives up when no renewal is confirmed within 2/3 of the lease
 *   after the last confirmed renewal was sent; the runner's kill threshold is
 *   lease/4; 2/3 + 1/4 = 11/12 of a lease, so a stuck leader is gone a
 *   margin of lease/12 (0.42 s at 5 s, 2.5 s at 30 s) before any other
 *   contender can acquire (with 3/4 the sum was exactly one lease: no margin
 *   for clock drift or a slow kill). Worst-case stall tolerated without
 *   losing leadership: 2/3 − 1/3 = 1/3 of the lease ≈ 1.7 s at 5 s, 10 s at 30 s.
 * - Followers retry every lease/10 (500 ms at 5 s): graceful hand-over
 *   (release by compare-and-delete) takes about half of that.
 */
export const DEFAULT_LEASE_MS = 5_000;

/** Fraction of the lease between renewals. */
export const RENEW_INTERVAL_RATIO = 1 / 3;

/** Fraction of the lease, counted from the last confirmed renewal's send time, after which an unconfirmed leader gives up. */
export const DEFAULT_RENEW_DEADLINE_RATIO = 2 / 3;

/** Fraction of the lease a runner's services get to stop after a loss before the kill hook runs (seed vvm-orchestration.md). */
export const KILL_THRESHOLD_RATIO = 1 / 4;

/** Default follower retry interval for a lease: lease/10, at least 10 ms. */
export function defaultRetryIntervalMs(leaseMs: number): number {
  return Math.max(10, Math.round(leaseMs / 10));
}

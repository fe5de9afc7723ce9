/** Options of {@link LoginLimiter}. */
export interface LoginLimiterOptions {
  /** Failed logins one client may make per window. @defaultValue 10 */
  maxFailures?: number;
  /** Window length, ms. @defaultValue 300_000 (5 minutes) */
  windowMs?: number;
  /** Most clients tracked; the oldest window is dropped beyond. @defaultValue 10_000 */
  maxClients?: number;
}

/**
 * Failed-login counter per client address, in fixed windows (one replica's
 * memory: with N replicas behind a balancer a client gets at most N × the
 * limit per window). While a client is over the limit every login attempt
 * is refused, right token or not, until its window ends.
 */
export class LoginLimiter {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #maxClients: number;
  readonly #clients = new Map<string, { failures: number; windowEndsAtMs: number }>();

  constructor(options: LoginLimiterOptions = {}) {
    this.#maxFailures = options.maxFailures ?? 10;
    this.#windowMs = options.windowMs ?? 300_000;
    this.#maxClients = options.maxClients ?? 10_000;
  }

  /** Milliseconds until `client` may try again, or 0 when it may now. */
  retryAfterMs(client: string, nowMs = Date.now()): number {
    const entry = this.#clients.get(client);
    if (!entry || entry.windowEndsAtMs <= nowMs) return 0;
    return entry.failures >= this.#maxFailures ? entry.windowEndsAtMs - nowMs : 0;
  }

  /** Counts a failed login of `client`. */
  fail(client: string, nowMs = Date.now()): void {
    let entry = this.#clients.get(client);
    if (!entry || entry.windowEndsAtMs <= nowMs) {
      if (this.#clients.size >= this.#maxClients) this.#evict(nowMs);
      entry = { failures: 0, windowEndsAtMs: nowMs + this.#windowMs };
      this.#clients.set(client, entry);
    }
    entry.failures += 1;
  }

  #evict(nowMs: number): void {
    for (const [client, entry] of this.#clients) if (entry.windowEndsAtMs <= nowMs) this.#clients.delete(client);
    if (this.#clients.size >= this.#maxClients) {
      const oldest = this.#clients.keys().next().value;
      if (oldest !== undefined) this.#clients.delete(oldest);
    }
  }
}

import type { Queryable } from '../db/index.ts';
import { type EdgeIdentity, verifyEdgeToken } from '../ingest/edge-tokens.ts';

/** Options of {@link EdgeTokenVerifier}. */
export interface EdgeTokenVerifierOptions {
  /** Where `edge_tokens` lives. */
  db: Queryable;
  /** How long an accepted token is remembered before the database is asked again (the revocation delay), in ms. @defaultValue 10_000 */
  cacheMs?: number;
  /** Most tokens remembered; the oldest is dropped beyond. @defaultValue 10_000 */
  maxEntries?: number;
}

/**
 * Edge tokens (`pve_…`, stored as SHA-256 in `edge_tokens`) checked against
 * the database, accepted ones remembered for `cacheMs` so a busy upload does
 * not query PostgreSQL per request. Unknown tokens are never cached (a token
 * created a moment ago works at once).
 */
export class EdgeTokenVerifier {
  readonly #db: Queryable;
  readonly #cacheMs: number;
  readonly #maxEntries: number;
  readonly #cache = new Map<string, { identity: EdgeIdentity; untilMs: number }>();

  constructor(options: EdgeTokenVerifierOptions) {
    this.#db = options.db;
    this.#cacheMs = options.cacheMs ?? 10_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  /**
   * @returns the token's identity, or null for an unknown or revoked token.
   * @throws whatever the database throws (the caller answers 5xx; the token is not accepted).
   */
  async verify(token: string): Promise<EdgeIdentity | null> {
    if (!token.startsWith('pve_')) return null;
    const cached = this.#cache.get(token);
    if (cached && cached.untilMs > Date.now()) return cached.identity;
    this.#cache.delete(token);
    const identity = await verifyEdgeToken(this.#db, token);
    if (identity) {
      if (this.#cache.size >= this.#maxEntries) {
        const oldest = this.#cache.keys().next().value;
        if (oldest !== undefined) this.#cache.delete(oldest);
      }
      this.#cache.set(token, { identity, untilMs: Date.now() + this.#cacheMs });
    }
    return identity;
  }
}

import { bearerAuth } from '@polyvision/shared';
import type { Context, MiddlewareHandler } from 'hono';
import type { EdgeIdentity } from '../ingest/edge-tokens.ts';
import type { EdgeTokenVerifier } from './edge-token-verifier.ts';
import { bearerTokenOf, isListedToken } from './operator-tokens.ts';

/**
 * Who is calling a core API:
 * - `operator`: an operator token (`OPS_TOKENS`): read access to every organization;
 * - `edge`: an edge token (`edge_tokens`): its own organization only.
 */
export type Principal = { kind: 'operator' } | ({ kind: 'edge' } & EdgeIdentity);

/** Hono variables set by {@link principalAuth}. */
export type PrincipalVariables = { principal: Principal };

/** Options of {@link principalAuth}. */
export interface PrincipalAuthOptions {
  /** Operator tokens (`OPS_TOKENS`); may be empty (then only edge tokens are accepted). */
  operatorTokens: readonly string[];
  /** Edge tokens; omitted: only operator tokens are accepted. */
  edgeTokens?: EdgeTokenVerifier;
  /** `WWW-Authenticate` realm. @defaultValue 'polyvision' */
  realm?: string;
}

/**
 * Middleware factory: accepts an operator token or an edge token as
 * `Authorization: Bearer …` and sets `c.var.principal`. Anything else is
 * answered by the shared `bearerAuth`: 401 `{code: 'unauthorized'}` with
 * `WWW-Authenticate`, 400 `{code: 'invalid_request'}` for a malformed header.
 */
export function principalAuth(options: PrincipalAuthOptions): MiddlewareHandler<{ Variables: PrincipalVariables }> {
  return bearerAuth({
    realm: options.realm ?? 'polyvision',
    verify: async (token, c) => {
      if (isListedToken(options.operatorTokens, token)) {
        c.set('principal', { kind: 'operator' } satisfies Principal);
        return true;
      }
      const identity = (await options.edgeTokens?.verify(token)) ?? null;
      if (identity) c.set('principal', { kind: 'edge', ...identity } satisfies Principal);
      return identity !== null;
    },
  }) as MiddlewareHandler<{ Variables: PrincipalVariables }>;
}

/**
 * Middleware factory for service endpoints that only operators and their
 * tools read (`/metrics`): a bearer token from `tokens` (e.g. `METRICS_TOKENS`
 * plus `OPS_TOKENS`), else 401/400 as {@link principalAuth}. With no token
 * configured every request is refused: the endpoint is closed, not open.
 */
export function tokenListAuth(tokens: readonly string[], realm = 'polyvision'): MiddlewareHandler {
  return bearerAuth({ realm, verify: (token) => isListedToken(tokens, token) });
}

/**
 * Whether the request carries a bearer token from `tokens` — for answers that
 * are public in short and detailed with a token (`/health/ready`).
 */
export function hasListedToken(c: Context, tokens: readonly string[]): boolean {
  const token = bearerTokenOf(c.req.header('authorization'));
  return token !== null && isListedToken(tokens, token);
}

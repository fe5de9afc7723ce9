import type { Context, MiddlewareHandler } from 'hono';
import { bearerAuth as honoBearerAuth } from 'hono/bearer-auth';
import { PolyvisionError } from '../errors/index.ts';

/** Options of {@link bearerAuth}: a fixed token list, or a verify function. */
export type BearerAuthOptions = { realm?: string } & (
  | { /** Accepted tokens (any of them). */ tokens: readonly string[] }
  | {
      /** Decides whether a well-formed token is accepted. */ verify: (
        token: string,
        c: Context,
      ) => boolean | Promise<boolean>;
    }
);

/**
 * Bearer-token middleware (RFC 6750), built on hono's `bearerAuth`, which
 * compares tokens in constant time (SHA-256 of both sides, then a
 * length-independent compare). Answers:
 * - no `Authorization` header or a wrong token → 401 `{code: 'unauthorized', message}`
 *   with `WWW-Authenticate: Bearer realm="…"` (or `error="invalid_token"`);
 * - a malformed header → 400 `{code: 'invalid_request', message}` with
 *   `WWW-Authenticate: Bearer error="invalid_request"` (RFC 6750 §3.1).
 *
 * The responses are thrown as hono HTTPExceptions carrying a response;
 * {@link errorHandler} passes them through unchanged.
 *
 * @throws PolyvisionError `config_invalid` at construction when the token list is empty or has an empty token.
 */
export function bearerAuth(options: BearerAuthOptions): MiddlewareHandler {
  const unauthorized = { code: 'unauthorized', message: 'a valid bearer token is required' };
  const invalidRequest = { code: 'invalid_request', message: 'the Authorization header is not "Bearer <token>"' };
  const common = {
    realm: options.realm ?? 'polyvision',
    noAuthenticationHeader: { message: unauthorized },
    invalidAuthenticationHeader: { message: invalidRequest },
    invalidToken: { message: unauthorized },
  };
  if ('tokens' in options) {
    if (options.tokens.length === 0 || options.tokens.some((t) => t.length === 0)) {
      throw new PolyvisionError('config_invalid', 'bearerAuth needs at least one non-empty token');
    }
    return honoBearerAuth({ ...common, token: [...options.tokens] });
  }
  return honoBearerAuth({ ...common, verifyToken: options.verify });
}

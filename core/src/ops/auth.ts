import { bearerAuth } from '@polyvision/shared';
import type { MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { isListedToken } from '../auth/operator-tokens.ts';
import { OPS_SESSION_COOKIE, type OpsSessions } from './session.ts';
import { SessionRevocations } from './session-revocations.ts';

/**
 * Whether `token` is one of the operator tokens. Compares SHA-256 digests
 * in constant time and visits every token, so timing says nothing about
 * which prefix matched.
 */
export function isOperatorToken(tokens: readonly string[], token: string): boolean {
  return isListedToken(tokens, token);
}

/**
 * Read-only operator auth (middleware factory): a valid ops session cookie
 * (see {@link OpsSessions}; what the page and its `EventSource` send), or
 * `Authorization: Bearer <operator token>` (scripts, curl). Anything else is
 * answered by the shared {@link bearerAuth}; a logged-out cookie (see
 * {@link SessionRevocations}) is refused: 401 `{code: 'unauthorized'}`
 * with `WWW-Authenticate`, or 400 for a malformed header. Edge tokens are
 * not operator tokens and are refused.
 */
export function opsAuth(
  tokens: readonly string[],
  sessions: OpsSessions,
  revocations: SessionRevocations = new SessionRevocations(),
): MiddlewareHandler {
  const bearer = bearerAuth({ realm: 'polyvision-ops', verify: (token) => isOperatorToken(tokens, token) });
  return async (c, next) => {
    if (
      !c.req.header('authorization') &&
      (await validSession(getCookie(c, OPS_SESSION_COOKIE), sessions, revocations))
    ) {
      return next();
    }
    return bearer(c, next);
  };
}

/** Whether a session cookie is valid (signed, unexpired, its token listed) and not logged out. */
export async function validSession(
  cookie: string | undefined,
  sessions: OpsSessions,
  revocations: SessionRevocations,
): Promise<boolean> {
  if (!cookie || !sessions.verify(cookie)) return false;
  return !(await revocations.isRevoked(cookie));
}

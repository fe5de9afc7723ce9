import type { MiddlewareHandler } from 'hono';
import { PolyvisionError } from '../errors/index.ts';

/** C0 controls (NUL, CR, LF, …) and DEL: never part of an id, a path segment or a filter. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function refuse(where: string): never {
  throw new PolyvisionError('invalid_characters', `the ${where} holds a control character (NUL, CR, LF, …)`, {
    httpStatus: 400,
  });
}

/**
 * Middleware factory: refuses a request whose path or query string, once
 * percent-decoded, holds a control character (U+0000–U+001F, U+007F) with
 * 400 `{code: 'invalid_characters'}`, and a path or query that is not valid
 * percent-encoding with 400 `{code: 'invalid_request'}`. Mount it first: a NUL
 * then never reaches PostgreSQL (which refuses it in text with an error that
 * would otherwise become a 500), a log line or a file name.
 */
export function rejectControlCharacters(): MiddlewareHandler {
  return async (c, next) => {
    const url = new URL(c.req.url);
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      throw new PolyvisionError('invalid_request', 'the path is not valid percent-encoding', { httpStatus: 400 });
    }
    if (hasControlCharacter(path)) refuse('path');
    let query: URLSearchParams;
    try {
      // URLSearchParams decodes leniently; decodeURIComponent finds broken escapes.
      decodeURIComponent(url.search.replaceAll('+', ' '));
      query = url.searchParams;
    } catch {
      throw new PolyvisionError('invalid_request', 'the query is not valid percent-encoding', { httpStatus: 400 });
    }
    for (const [name, value] of query) {
      if (hasControlCharacter(name) || hasControlCharacter(value)) refuse('query');
    }
    await next();
  };
}

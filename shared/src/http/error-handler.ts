import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { PolyvisionError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../logging/index.ts';

/** Options of {@link errorHandler}. */
export interface ErrorHandlerOptions {
  /** Where unexpected errors (500) and server-side PolyvisionErrors are logged. @defaultValue silentLogger */
  logger?: Logger;
}

function statusOf(status: number): ContentfulStatusCode {
  return (status >= 400 && status <= 599 ? status : 500) as ContentfulStatusCode;
}

/**
 * Hono `onError` handler: the one place where errors become HTTP answers.
 *
 * - `PolyvisionError` → its `httpStatus`, body `{code, message, ...details}`;
 *   a numeric `details.retry_after_ms` also sets `Retry-After` (whole seconds,
 *   rounded up; RFC 9110 §10.2.3), e.g. for 507 and 503 answers.
 * - `ZodError` (a handler parsed input with `schema.parse`) → 400
 *   `{code: 'validation_failed', message, issues}`.
 * - Hono `HTTPException` → its own response when it carries one (e.g.
 *   bearer auth), else its status with `{code: 'http_<status>', message}`.
 * - Anything else → 500 `{code: 'internal_error', message: 'internal error'}`;
 *   the error and stack go to the log only, never to the client.
 *
 * Use: `app.onError(errorHandler({ logger }))`.
 */
export function errorHandler(options: ErrorHandlerOptions = {}): ErrorHandler {
  const logger = options.logger ?? silentLogger;
  return (error: Error, c: Context) => {
    if (error instanceof PolyvisionError) {
      if (error.httpStatus >= 500) logger.error({ err: error, path: c.req.path }, 'request failed');
      const retryAfterMs = error.details.retry_after_ms;
      if (typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
        c.header('Retry-After', String(Math.ceil(retryAfterMs / 1000)));
      }
      return c.json(error.toJSON(), statusOf(error.httpStatus));
    }
    if (error instanceof z.ZodError) {
      const issue = error.issues[0];
      return c.json(
        {
          code: 'validation_failed',
          message: `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid input'}`,
          issues: error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
        },
        400,
      );
    }
    if (error instanceof HTTPException) {
      if (error.res) return error.getResponse();
      return c.json({ code: `http_${error.status}`, message: error.message || 'request failed' }, error.status);
    }
    logger.error({ err: error, path: c.req.path, method: c.req.method }, 'unexpected error');
    return c.json({ code: 'internal_error', message: 'internal error' }, 500);
  };
}

/** Hono `notFound` handler answering 404 `{code: 'not_found', message}`. Use: `app.notFound(notFoundHandler)`. */
export const notFoundHandler: NotFoundHandler = (c) =>
  c.json({ code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` }, 404);

/**
 * Maps what the tus client reports (tus-js-client `DetailedError` with the
 * original request and response) to Polyvision errors the upload loop acts on.
 */
import { PolyvisionError } from '@polyvision/shared';
import { parseRetryAfterMs } from './retry-after.ts';

interface TusResponse {
  getStatus(): number;
  getHeader(name: string): string | undefined;
  getBody(): string;
}

/**
 * - 507 → `ingest_insufficient_storage` (retriable; `details.retry_after_ms` from `Retry-After`);
 * - 429, 503 → `ingest_busy` (retriable, with `Retry-After` when given);
 * - 401, 403 → `ingest_unauthorized` (not retriable: the token is wrong);
 * - 404, 410 → `ingest_upload_gone` (the stored upload URL is unknown; start a new upload);
 * - other 4xx → `ingest_rejected` (not retriable);
 * - 5xx → `ingest_error` (retriable);
 * - no response → `ingest_unreachable` (retriable).
 */
export function ingestError(error: unknown): PolyvisionError {
  if (error instanceof PolyvisionError) return error;
  const response = (error as { originalResponse?: TusResponse | null }).originalResponse ?? null;
  const message = (error as Error)?.message ?? String(error);
  if (!response) {
    return new PolyvisionError('ingest_unreachable', `the ingest cannot be reached: ${message}`, {
      retriable: true,
      cause: error,
    });
  }
  const status = response.getStatus();
  const retryAfterMs = parseRetryAfterMs(response.getHeader('Retry-After'));
  const body = safeBody(response);
  const details = { status, ...(retryAfterMs === null ? {} : { retry_after_ms: retryAfterMs }), body };
  if (status === 507) {
    return new PolyvisionError(
      'ingest_insufficient_storage',
      `the ingest has no storage for this file now (507${retryAfterMs === null ? '' : `, retry after ${retryAfterMs} ms`})`,
      { retriable: true, cause: error, details },
    );
  }
  if (status === 429 || status === 503) {
    return new PolyvisionError('ingest_busy', `the ingest is busy (${status})`, {
      retriable: true,
      cause: error,
      details,
    });
  }
  if (status === 401 || status === 403) {
    return new PolyvisionError('ingest_unauthorized', `the ingest refused the edge's token (${status}): ${body}`, {
      retriable: false,
      cause: error,
      details,
    });
  }
  if (status === 404 || status === 410) {
    return new PolyvisionError('ingest_upload_gone', `the ingest no longer knows this upload (${status})`, {
      retriable: true,
      cause: error,
      details,
    });
  }
  if (status >= 400 && status < 500) {
    return new PolyvisionError('ingest_rejected', `the ingest rejected the upload (${status}): ${body}`, {
      retriable: false,
      cause: error,
      details,
    });
  }
  return new PolyvisionError('ingest_error', `the ingest failed (${status}): ${body}`, {
    retriable: true,
    cause: error,
    details,
  });
}

function safeBody(response: TusResponse): string {
  try {
    return (response.getBody() ?? '').slice(0, 500);
  } catch {
    return '';
  }
}

import { PolyvisionError } from '../errors/index.ts';

/**
 * How the HTTP client classifies failures (codes are part of the API):
 *
 * | code | retriable | when |
 * |---|---|---|
 * | `http_timeout` | yes | no answer within `timeoutMs`, undici connect/headers/body timeouts, HTTP 408 and 504 |
 * | `http_unavailable` | yes | connection refused/reset, DNS failure, socket closed, any other 5xx |
 * | `http_rate_limited` | yes | HTTP 429 (`details.retry_after_ms` from `Retry-After`) |
 * | `http_rejected` | no | any other 4xx (the request itself is wrong: retrying repeats it) |
 * | `redirect_refused` | no | a redirect to another origin (credentials must not leak), or too many |
 * | `invalid_response` | no | a 2xx body that is not JSON or does not match the schema |
 * | `response_too_large` | no | the body exceeds `maxBodyBytes` |
 * | `aborted` | no | the caller's signal fired |
 *
 * Why `invalid_response` is not retriable: a peer that answers 2xx with
 * bytes that are not the promised JSON is almost always a deterministic
 * fault (wrong version, wrong endpoint, a proxy's HTML page); retrying the
 * same request gets the same bytes. Truly transient damage — a connection
 * cut mid-body — surfaces as a socket error (`http_unavailable`, retriable)
 * because undici checks Content-Length and chunked framing.
 *
 * For error statuses the peer's own `{code, message}` body (see
 * contracts/error-body.ts) is kept in `details.peer_code`, `details.peer_message`
 * and `details.peer_body`, with `details.status`.
 */
export type HttpErrorCode =
  | 'http_timeout'
  | 'http_unavailable'
  | 'http_rate_limited'
  | 'http_rejected'
  | 'redirect_refused'
  | 'invalid_response'
  | 'response_too_large';

/** undici and Node network error codes that mean "the peer could not be reached or dropped us". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

function errorCodeOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || TIMEOUT_CODES.has(code))) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Maps a thrown network error (undici or Node) to a PolyvisionError; unknown errors become `http_unavailable`. */
export function networkError(error: unknown, method: string, url: string): PolyvisionError {
  const code = errorCodeOf(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (code && TIMEOUT_CODES.has(code)) {
    return new PolyvisionError('http_timeout', `${method} ${url} timed out (${code})`, {
      retriable: true,
      cause: error,
      httpStatus: 504,
      details: { url },
    });
  }
  return new PolyvisionError('http_unavailable', `${method} ${url} failed: ${reason}${code ? ` (${code})` : ''}`, {
    retriable: true,
    cause: error,
    httpStatus: 502,
    details: { url, ...(code ? { network_code: code } : {}) },
  });
}

/** The error for a total-time timeout of the client itself. */
export function timeoutError(method: string, url: string, timeoutMs: number): PolyvisionError {
  return new PolyvisionError('http_timeout', `${method} ${url} got no complete answer within ${timeoutMs} ms`, {
    retriable: true,
    httpStatus: 504,
    details: { url, timeout_ms: timeoutMs },
  });
}

/**
 * Parses `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date)
 * into ms from `nowMs`; undefined when absent or unreadable.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** Maps a non-2xx, non-redirect status and the peer's body to a PolyvisionError (see the table above). */
export function statusError(
  method: string,
  url: string,
  status: number,
  peerBody: unknown,
  retryAfter: string | undefined,
): PolyvisionError {
  const peer =
    peerBody && typeof peerBody === 'object' && !Array.isArray(peerBody) ? (peerBody as Record<string, unknown>) : {};
  const peerCode = typeof peer.code === 'string' ? peer.code : undefined;
  const peerMessage = typeof peer.message === 'string' ? peer.message : undefined;
  const details: Record<string, unknown> = { url, status, peer_body: peerBody };
  if (peerCode) details.peer_code = peerCode;
  if (peerMessage) details.peer_message = peerMessage;
  const retryAfterMs = parseRetryAfterMs(retryAfter);
  if (retryAfterMs !== undefined) details.retry_after_ms = retryAfterMs;
  const what = `${method} ${url} answered ${status}${peerCode ? ` ${peerCode}` : ''}${peerMessage ? `: ${peerMessage}` : ''}`;
  if (status === 408 || status === 504) {
    return new PolyvisionError('http_timeout', what, { retriable: true, httpStatus: 504, details });
  }
  if (status === 429) {
    return new PolyvisionError('http_rate_limited', what, { retriable: true, httpStatus: 503, details });
  }
  if (status >= 500) {
    return new PolyvisionError('http_unavailable', what, { retriable: true, httpStatus: 502, details });
  }
  return new PolyvisionError('http_rejected', what, { retriable: false, httpStatus: 502, details });
}

import { Readable } from 'node:stream';
import { type Dispatcher, request } from 'undici';
import type { z } from 'zod';
import { PolyvisionError } from '../errors/index.ts';
import { abortError } from '../retry/sleep.ts';
import { networkError, statusError, timeoutError } from './client-errors.ts';

/** Options of {@link httpJson} and {@link httpJsonResponse}. */
export interface HttpJsonOptions<T> {
  /** zod schema the 2xx body must match; without one the parsed JSON is returned as `unknown`. */
  schema?: z.ZodType<T>;
  /** @defaultValue 'GET' */
  method?: string;
  headers?: Record<string, string>;
  /**
   * Request body: a string, bytes or a Node Readable are sent as they are;
   * anything else is sent as JSON (`content-type: application/json`).
   */
  body?: unknown;
  /** Total time for connect, headers and body, in ms. @defaultValue 10_000 */
  timeoutMs?: number;
  /** Cancels the request; the call rejects with code `aborted`. */
  signal?: AbortSignal;
  /** undici dispatcher, e.g. from {@link createHttpAgent}. @defaultValue undici's global dispatcher */
  dispatcher?: Dispatcher;
  /** Largest response body read, in bytes. @defaultValue 8 MiB */
  maxBodyBytes?: number;
  /** Same-origin redirects followed before giving up. @defaultValue 5 */
  maxRedirects?: number;
}

/** What {@link httpJsonResponse} returns. */
export interface HttpJsonResponse<T> {
  /** 2xx or 304. */
  status: number;
  headers: Record<string, string>;
  /** Parsed and validated body; `undefined` for 204, 304 and an empty body. */
  body: T | undefined;
  /** The final URL after same-origin redirects. */
  url: string;
}

const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

async function readCapped(body: AsyncIterable<Uint8Array>, maxBodyBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let sizeBytes = 0;
  for await (const chunk of body) {
    sizeBytes += chunk.byteLength;
    if (sizeBytes > maxBodyBytes) {
      throw new PolyvisionError('response_too_large', `${what}: response body exceeds ${maxBodyBytes} bytes`, {
        httpStatus: 502,
        details: { max_body_bytes: maxBodyBytes },
      });
    }
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, sizeBytes);
}

function encodeBody(body: unknown, headers: Record<string, string>): string | Uint8Array | Readable | undefined {
  if (body === undefined) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array || body instanceof Readable) return body;
  if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json';
  }
  return JSON.stringify(body);
}

/**
 * One HTTP exchange expecting JSON, on undici, with the failure mapping of
 * client-errors.ts (timeouts, 5xx and 429 retriable; other 4xx not; garbage
 * `invalid_response`; oversize `response_too_large`). Redirects
 * (301/302/303/307/308) are followed only within the same origin (scheme,
 * host, port); another origin is refused with `redirect_refused` so that
 * bearer tokens never travel elsewhere. 303, and 301/302 after a non-GET,
 * continue as GET without a body (RFC 9110 §15.4).
 *
 * Compose with `retry()` for retries; this function tries once.
 *
 * @throws PolyvisionError with one of the codes in client-errors.ts, or `aborted`.
 */
export async function httpJsonResponse<T = unknown>(
  url: string | URL,
  options: HttpJsonOptions<T> = {},
): Promise<HttpJsonResponse<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxRedirects = options.maxRedirects ?? 5;
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  let method = (options.method ?? 'GET').toUpperCase();
  let body = encodeBody(options.body, headers);
  let current = new URL(url);

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeout'));
  }, timeoutMs);
  const onCallerAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) {
    clearTimeout(timer);
    throw abortError(options.signal);
  }
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });

  const fail = (error: unknown): never => {
    if (timedOut) throw timeoutError(method, current.href, timeoutMs);
    if (options.signal?.aborted) throw abortError(options.signal);
    if (error instanceof PolyvisionError) throw error;
    throw networkError(error, method, current.href);
  };

  try {
    for (let hop = 0; ; hop++) {
      const what = `${method} ${current.href}`;
      let response: Dispatcher.ResponseData;
      try {
        response = await request(current, {
          method: method as Dispatcher.HttpMethod,
          headers,
          body,
          signal: controller.signal,
          ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
        });
      } catch (error) {
        return fail(error);
      }
      const status = response.statusCode;
      const responseHeaders = flattenHeaders(response.headers);

      if ([301, 302, 303, 307, 308].includes(status) && responseHeaders.location) {
        response.body.dump().catch(() => {});
        const next = new URL(responseHeaders.location, current);
        if (next.origin !== current.origin) {
          throw new PolyvisionError('redirect_refused', `${what} redirected to another origin (${next.origin})`, {
            httpStatus: 502,
            details: { url: current.href, location: next.href },
          });
        }
        if (hop >= maxRedirects) {
          throw new PolyvisionError('redirect_refused', `${what}: more than ${maxRedirects} redirects`, {
            httpStatus: 502,
            details: { url: current.href, location: next.href },
          });
        }
        if (status === 303 || ((status === 301 || status === 302) && method !== 'GET' && method !== 'HEAD')) {
          method = 'GET';
          body = undefined;
          delete headers['content-type'];
        } else if (body instanceof Readable) {
          throw new PolyvisionError('redirect_refused', `${what}: cannot replay a streamed body after ${status}`, {
            httpStatus: 502,
            details: { url: current.href, location: next.href },
          });
        }
        current = next;
        continue;
      }

      let raw: Buffer;
      try {
        raw = await readCapped(response.body, maxBodyBytes, what);
      } catch (error) {
        response.body.destroy();
        return fail(error);
      }
      const text = raw.toString('utf8');

      if (status < 200 || status >= 300) {
        if (status === 304) return { status, headers: responseHeaders, body: undefined, url: current.href };
        let peerBody: unknown = text;
        try {
          peerBody = text ? JSON.parse(text) : undefined;
        } catch {}
        throw statusError(method, current.href, status, peerBody, responseHeaders['retry-after']);
      }

      if (status === 204 || text.length === 0) {
        return { status, headers: responseHeaders, body: undefined, url: current.href };
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new PolyvisionError('invalid_response', `${what} answered ${status} with a body that is not JSON`, {
          cause: error,
          httpStatus: 502,
          details: { url: current.href, status, body_start: text.slice(0, 200) },
        });
      }
      if (!options.schema) return { status, headers: responseHeaders, body: parsed as T, url: current.href };
      const checked = options.schema.safeParse(parsed);
      if (!checked.success) {
        const issue = checked.error.issues[0];
        throw new PolyvisionError(
          'invalid_response',
          `${what} answered ${status} with JSON that does not match the contract: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
          {
            cause: checked.error,
            httpStatus: 502,
            details: { url: current.href, status, issues: checked.error.issues },
          },
        );
      }
      return { status, headers: responseHeaders, body: checked.data, url: current.href };
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}

/**
 * Like {@link httpJsonResponse} but returns only the validated body.
 * With a schema that rejects `undefined`, a 204 or empty body raises `invalid_response`.
 */
export async function httpJson<T = unknown>(url: string | URL, options: HttpJsonOptions<T> = {}): Promise<T> {
  const response = await httpJsonResponse(url, options);
  if (response.body === undefined && options.schema && response.status !== 304) {
    const checked = options.schema.safeParse(undefined);
    if (!checked.success) {
      throw new PolyvisionError('invalid_response', `${response.url} answered ${response.status} with no body`, {
        httpStatus: 502,
        details: { url: response.url, status: response.status },
      });
    }
    return checked.data;
  }
  return response.body as T;
}

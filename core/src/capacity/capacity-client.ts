import { type CapacityReport, capacityReportSchema, httpJsonResponse, PolyvisionError } from '@polyvision/shared';
import type { Dispatcher } from 'undici';
import type { StorageElementConfig } from './storage-elements.ts';

/** The answer of one capacity poll. */
export type CapacityPoll =
  | { status: 'changed'; report: CapacityReport; etag: string | undefined }
  | { status: 'not_modified'; etag: string | undefined };

/** Options of {@link fetchCapacity}. */
export interface FetchCapacityOptions {
  /** Total time of the exchange, in ms (`CAPACITY_MONITOR_HTTP_TIMEOUT`). */
  timeoutMs: number;
  /** `ETag` of the last report; a matching SE answers `304`. */
  etag?: string | undefined;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

/** Reports above this are refused as absurd (1 EiB: no single SE holds that). */
export const MAX_PLAUSIBLE_BYTES = 2 ** 60;

/**
 * One `GET {endpoint}/api/v1/capacity` (storage-element/README.md) with the
 * SE's bearer token and `If-None-Match`, validated against the
 * `CapacityReport` contract plus plausibility checks: the `storage_id` must
 * be the configured one, sizes at most {@link MAX_PLAUSIBLE_BYTES},
 * `used + available ≤ total`, and `percent_used` within 1 point of
 * `used / total × 100`.
 *
 * @throws PolyvisionError from the shared HTTP client (`http_timeout`,
 *   `http_unavailable`, `http_rejected`, `redirect_refused` for another
 *   origin, `invalid_response`, `response_too_large`) or
 *   `invalid_response` for an implausible report. Timeouts and 5xx are retriable.
 */
export async function fetchCapacity(se: StorageElementConfig, options: FetchCapacityOptions): Promise<CapacityPoll> {
  const headers: Record<string, string> = { authorization: `Bearer ${se.token}` };
  if (options.etag) headers['if-none-match'] = options.etag;
  const response = await httpJsonResponse(`${se.endpoint}/api/v1/capacity`, {
    schema: capacityReportSchema,
    headers,
    timeoutMs: options.timeoutMs,
    maxBodyBytes: 64 * 1024,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const etag = response.headers.etag;
  if (response.status === 304) return { status: 'not_modified', etag: etag ?? options.etag };
  const report = response.body;
  if (!report) throw implausible(se, 'empty body');
  if (report.storage_id !== se.storage_id) {
    throw implausible(se, `storage_id is "${report.storage_id}", configured "${se.storage_id}"`);
  }
  if (report.total > MAX_PLAUSIBLE_BYTES) throw implausible(se, `total ${report.total} bytes is absurd`);
  if (report.used + report.available > report.total) {
    throw implausible(se, `used ${report.used} + available ${report.available} exceeds total ${report.total}`);
  }
  const percent = report.total === 0 ? 0 : (report.used / report.total) * 100;
  if (Math.abs(percent - report.percent_used) > 1) {
    throw implausible(se, `percent_used ${report.percent_used} but used/total is ${percent.toFixed(2)}`);
  }
  return { status: 'changed', report, etag };
}

function implausible(se: StorageElementConfig, why: string): PolyvisionError {
  return new PolyvisionError('invalid_response', `capacity report of ${se.storage_id} is implausible: ${why}`, {
    httpStatus: 502,
    details: { storage_id: se.storage_id },
  });
}

/** A short label of a poll failure for `capacity_poll_failures_total{error_type}`. */
export function pollErrorType(error: unknown): string {
  if (!(error instanceof PolyvisionError)) return 'other';
  const inner = error.code === 'retries_exhausted' && error.cause instanceof PolyvisionError ? error.cause : error;
  const code = inner.code;
  const status = inner.details.status;
  switch (code) {
    case 'http_timeout':
      return 'timeout';
    case 'http_unavailable':
      return typeof status === 'number' ? 'http_5xx' : 'connection';
    case 'http_rate_limited':
    case 'http_rejected':
      return 'http_4xx';
    case 'invalid_response':
    case 'response_too_large':
      return 'invalid_response';
    case 'redirect_refused':
      return 'redirect_refused';
    default:
      return 'other';
  }
}

import { PolyvisionError } from '../errors/index.ts';

/**
 * Error codes of the leadership capability (stable; they reach logs and
 * `AbortSignal.reason`s):
 * - `leadership_lost`: the store no longer holds this leader's value (expired, taken over or changed);
 * - `leadership_renew_timeout`: no renewal was confirmed before the renew deadline (store slow or unreachable);
 * - `leadership_released`: released on purpose (`release()`, `cleanup()`, `close()`);
 * - `leadership_not_acquired`: a runner could not acquire within its acquisition timeout;
 * - `leadership_service_failed`: a leadership-scoped service threw;
 * - `elections_closed`: the Elections instance was closed;
 * - `campaign_aborted`: a campaign's signal was aborted before it won.
 */
export type LeadershipErrorCode =
  | 'leadership_lost'
  | 'leadership_renew_timeout'
  | 'leadership_released'
  | 'leadership_not_acquired'
  | 'leadership_service_failed'
  | 'elections_closed'
  | 'campaign_aborted';

/** A leadership error; `details` always carries the `key`. */
export class LeadershipError extends PolyvisionError {
  declare readonly code: LeadershipErrorCode;

  constructor(
    code: LeadershipErrorCode,
    message: string,
    options: { key: string; term?: number; retriable?: boolean; cause?: unknown },
  ) {
    const details: Record<string, unknown> = { key: options.key };
    if (options.term !== undefined) details.term = options.term;
    super(code, message, { retriable: options.retriable ?? true, cause: options.cause, httpStatus: 503, details });
    this.name = 'LeadershipError';
  }
}

import type { MessageError } from '@polyvision/shared';
import { stageRetryDelayMs } from '../backoff.ts';
import type { OrchestratorTuning } from '../options.ts';
import type { StageRow } from './job-rows.ts';

/**
 * Whether a failed attempt is tried again, and after how long:
 * - a waiting error (`waitingErrorCodes`, retriable: an input is not
 *   reachable now) is retried with `waitRetry` backoff while the run is
 *   younger than `retryWindowMs`, without using up `max_attempts`;
 * - any other retriable error while the run has attempts left, with `retry` backoff.
 * @returns null when the stage fails.
 */
export function retryOf(
  tuning: OrchestratorTuning,
  stage: StageRow,
  error: MessageError,
): { delayMs: number; waiting: boolean } | null {
  if (!error.retriable) return null;
  const runStartedMs = stage.run_started_at ? new Date(stage.run_started_at).getTime() : Date.now();
  if (tuning.waitingErrorCodes.includes(error.code) && Date.now() < runStartedMs + tuning.retryWindowMs) {
    return { delayMs: stageRetryDelayMs(stage.waiting_attempts + 1, tuning.waitRetry), waiting: true };
  }
  const counted = stage.attempt - stage.run_first_attempt + 1 - stage.waiting_attempts;
  if (counted >= stage.max_attempts) return null;
  return { delayMs: stageRetryDelayMs(counted, tuning.retry), waiting: false };
}

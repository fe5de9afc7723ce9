import type { ArtifactRef, Logger, Stage, StageTask } from '@polyvision/shared';

export type { ArtifactRef, Stage, StageTask };

/** What a stage returns: stored artifacts (they become the next stages' `task.inputs`) and small numbers. */
export interface StageResult {
  outputs: ArtifactRef[];
  /** Stage-specific counts (frames, detections, …), shown on the job. */
  stats?: Record<string, number>;
}

/** What the runtime gives a handler for one task. */
export interface StageContext {
  /**
   * The task as dispatched (shared contract `stageTaskSchema`): ids, attempt,
   * model version, `inputs` (the job's uploaded files plus the outputs of the
   * stages this one depends on), `params`.
   */
  task: StageTask;
  /**
   * Aborted when the job is cancelled, the worker shuts down, or the task is
   * handed back. Pass it to child processes (ffmpeg) and loops; stop promptly.
   */
  signal: AbortSignal;
  /**
   * Reports progress as a fraction 0..1 (clamped). Also the heartbeat: the
   * orchestrator's reconciler re-dispatches a task that has not reported
   * within its deadline. Cheap to call often: sends are throttled.
   */
  reportProgress(fraction: number, note?: string): void;
  logger: Logger;
}

/**
 * One analysis stage, plugged into the worker runtime
 * (`core/src/workers/runtime`, see its README).
 *
 * `run` returns the result or throws. A thrown `PolyvisionError` keeps its
 * `code` and `retriable` flag; any other error is reported as `stage_error`,
 * retriable (Temporal's rule: retry unless told not to). The orchestrator
 * retries retriable failures with backoff up to the stage's maximum
 * attempts. An abort (cancel, shutdown) is not a failure: the runtime
 * reports nothing and hands the task back.
 */
export interface StageHandler {
  readonly stage: Stage;
  run(context: StageContext): Promise<StageResult>;
  /** Releases models, pools; called once when the worker stops. */
  close?(): Promise<void>;
}

import type { Logger } from '@polyvision/shared';
import type { StageName } from '../../orchestrator/contracts/stages.ts';
import type { StageTask } from '../../orchestrator/contracts/tasks.ts';

export type { StageName, StageTask };

/** JSON-safe outputs of a stage; they reach the next stages as `task.upstream[stage]`. */
export type StageOutputs = Record<string, unknown>;

/** What the runtime gives a handler for one task. */
export interface StageContext {
  /** The task as dispatched (ids, attempt, model version, job input, upstream outputs). */
  task: StageTask;
  /**
   * Aborted when the job is cancelled, the worker shuts down, or the task is
   * handed back. Pass it to child processes (ffmpeg) and loops; stop promptly.
   */
  signal: AbortSignal;
  /**
   * Reports progress 0–100 (clamped). Also the heartbeat: the orchestrator's
   * reconciler re-dispatches a task that has not reported within its deadline
   * (`task.deadline_ms`). Cheap to call often: sends are throttled.
   */
  reportProgress(progressPercent: number): void;
  logger: Logger;
}

/**
 * One analysis stage, plugged into the worker runtime
 * (`core/src/workers/runtime`, see its README).
 *
 * `run` returns the outputs or throws. A thrown `PolyvisionError` keeps its
 * `code` and `retriable` flag; any other error is reported as
 * `stage_error`, retriable (Temporal's rule: retry unless told not to). The
 * orchestrator retries retriable failures with backoff up to the stage's
 * maximum attempts. An abort (cancel, shutdown) is not a failure: the runtime
 * reports nothing and hands the task back.
 */
export interface StageHandler {
  readonly stage: StageName;
  run(context: StageContext): Promise<StageOutputs>;
  /** Releases models, pools; called once when the worker stops. */
  close?(): Promise<void>;
}

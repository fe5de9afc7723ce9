/**
 * The edge's timed jobs, on node-cron:
 * - the match tick (every second): compares the schedule with the clock and
 *   tells the node which match should be recording (`onMatch`), so a node
 *   restarted in the middle of a match resumes recording at once;
 * - the heartbeat (every `heartbeatS`): `onHeartbeat` (log, metrics, ingest probe);
 * - the cleanup (`cleanupCron`): `onCleanup` (retention and disk guard).
 * Jobs never overlap themselves (`noOverlap`); `stop()` destroys them.
 */
import { ValidationError } from '@polyvision/shared';
import cron, { type ScheduledTask } from 'node-cron';
import { activeMatch, type ScheduledMatch } from './match-window.ts';

/** Options of {@link startScheduler}. */
export interface SchedulerOptions {
  matches: readonly ScheduledMatch[];
  leadS: number;
  tailS: number;
  heartbeatS: number;
  cleanupCron: string;
  /** Called on every tick with the match that should be recording now (null: none). */
  onMatch: (match: ScheduledMatch | null) => void | Promise<void>;
  onHeartbeat: () => void | Promise<void>;
  onCleanup: () => void | Promise<void>;
  now?: () => number;
}

/** node-cron expression for "every `seconds` seconds" (seconds field when < 60, else minutes). */
export function everySecondsExpression(seconds: number): string {
  if (seconds < 60) return `*/${Math.max(1, Math.round(seconds))} * * * * *`;
  return `0 */${Math.max(1, Math.round(seconds / 60))} * * * *`;
}

/**
 * Starts the jobs; the returned `stop()` ends them.
 * @throws ValidationError `edge_schedule_invalid_cron` for a cleanup expression node-cron rejects.
 */
export function startScheduler(options: SchedulerOptions): { stop(): Promise<void> } {
  if (!cron.validate(options.cleanupCron)) {
    throw new ValidationError(
      'edge_schedule_invalid_cron',
      `schedule.cleanup_cron ${JSON.stringify(options.cleanupCron)} is not a valid cron expression`,
    );
  }
  const now = options.now ?? Date.now;
  const tasks: ScheduledTask[] = [
    cron.schedule(
      '* * * * * *',
      () => options.onMatch(activeMatch(options.matches, now(), options.leadS, options.tailS)),
      {
        name: 'edge-match-tick',
        noOverlap: true,
      },
    ),
    cron.schedule(everySecondsExpression(options.heartbeatS), () => options.onHeartbeat(), {
      name: 'edge-heartbeat',
      noOverlap: true,
    }),
    cron.schedule(options.cleanupCron, () => options.onCleanup(), { name: 'edge-cleanup', noOverlap: true }),
  ];
  // First decision at once, not a second later.
  void Promise.resolve(options.onMatch(activeMatch(options.matches, now(), options.leadS, options.tailS)));
  return {
    async stop() {
      for (const task of tasks) await task.destroy();
    },
  };
}

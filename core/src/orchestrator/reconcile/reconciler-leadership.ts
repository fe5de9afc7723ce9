import { type Logger, silentLogger, startLeaderLoop, type TtlStore } from '@polyvision/shared';
import cron from 'node-cron';
import type { Reconciler } from './reconciler.ts';

export interface ReconcilerScheduleOptions {
  reconciler: Reconciler;
  /** Where the reconciler's leadership is decided (Redis, PostgreSQL or memory TtlStore). */
  store: TtlStore;
  /** This replica's identity. */
  instanceId: string;
  /** Election key. @defaultValue 'orchestrator:reconciler_leader' */
  key?: string;
  /** Leadership lease. @defaultValue 30_000 */
  leaseMs?: number;
  /** node-cron expression (6 fields = with seconds). @defaultValue every 15 s: '*\/15 * * * * *' */
  cronExpression?: string;
  logger?: Logger;
  /** Called if the reconciler does not stop within lease/4 after losing leadership. @defaultValue process.exit(1) */
  kill?: () => void;
}

/**
 * Runs the reconciler on one replica only: the replicas campaign for
 * `orchestrator:reconciler_leader` (shared `Elections` over a `TtlStore`);
 * the leader runs `reconcile()` on a node-cron schedule, without overlap,
 * until it loses leadership or `stop()` is called (shared `LeadershipRunner`).
 * Followers keep campaigning in the background.
 *
 * @returns `stop()`, which ends the schedule and releases leadership.
 */
export function startReconcilerLeadership(options: ReconcilerScheduleOptions): { stop(): Promise<void> } {
  const logger = options.logger ?? silentLogger;
  const leaseMs = options.leaseMs ?? 30_000;
  const expression = options.cronExpression ?? '*/15 * * * * *';
  if (!cron.validate(expression)) throw new Error(`invalid cron expression ${expression}`);
  const service = async (signal: AbortSignal) => {
    const task = cron.schedule(
      expression,
      async () => {
        try {
          await options.reconciler.reconcile();
        } catch (error) {
          logger.warn({ err: error }, 'reconciler pass failed');
        }
      },
      { noOverlap: true, name: `reconciler-${options.instanceId}` },
    );
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await task.destroy();
  };
  return startLeaderLoop({
    store: options.store,
    key: options.key ?? 'orchestrator:reconciler_leader',
    instanceId: options.instanceId,
    leaseMs,
    service,
    logger,
    ...(options.kill ? { kill: options.kill } : {}),
  });
}

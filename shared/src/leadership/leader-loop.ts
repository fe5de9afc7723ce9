import type { Logger } from '../logging/index.ts';
import { silentLogger } from '../logging/index.ts';
import { Elections } from './elections.ts';
import { LeadershipRunner, type LeadershipService } from './runner.ts';
import type { TtlStore } from './ttl-store.ts';

/** Options of {@link startLeaderLoop}. */
export interface LeaderLoopOptions {
  /** Where leadership is decided. */
  store: TtlStore;
  /** Election key, e.g. `orchestrator:reconciler_leader`. */
  key: string;
  /** This replica's identity (characters outside `[A-Za-z0-9:._-]` become `_`). */
  instanceId: string;
  /** Leadership lease, in ms. */
  leaseMs: number;
  /** What the leader runs until its signal aborts (leadership lost or `stop()`). */
  service: LeadershipService;
  logger?: Logger;
  /** Called if the service does not stop within lease/4 after losing leadership. @defaultValue process.exit(1) */
  kill?: () => void;
}

/**
 * Campaigns for `key` for as long as it runs: each won term runs `service`
 * under a {@link LeadershipRunner} (fenced by its lease, with the runner's
 * killer); when a term ends (lease lost), it campaigns again. Followers wait
 * in the campaign.
 *
 * @returns `stop()`: ends the current term, releases leadership, closes the elections.
 */
export function startLeaderLoop(options: LeaderLoopOptions): { stop(): Promise<void> } {
  const logger = options.logger ?? silentLogger;
  const elections = new Elections(options.store, { logger });
  const stopping = new AbortController();
  let runner: LeadershipRunner | null = null;
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      runner = new LeadershipRunner({
        elections,
        key: options.key,
        value: options.instanceId.replaceAll(/[^A-Za-z0-9:._-]/g, '_'),
        leaseMs: options.leaseMs,
        acquireTimeoutMs: 24 * 3600 * 1000,
        services: [options.service],
        logger,
        ...(options.kill ? { kill: options.kill } : {}),
      });
      try {
        const problem = await runner.launch();
        const either = AbortSignal.any([problem, stopping.signal]);
        await new Promise<void>((resolve) => either.addEventListener('abort', () => resolve(), { once: true }));
      } catch {
        // not acquired (stopping): the loop decides
      }
      await runner.shutdown().catch(() => null);
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await runner?.shutdown().catch(() => null);
      await elections.close();
      await loop;
    },
  };
}

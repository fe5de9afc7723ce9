import { ConfigError, createLogger, shutdownDeadlineMs, untilStopSignal } from '@polyvision/shared';
import { loadStorageElementConfig } from './config.ts';
import { startStorageElement } from './storage-element.ts';

/**
 * Runs an SE until SIGTERM/SIGINT: loads config from `env`, starts, prints
 * `storage element listening` (JSON log on stderr), and on a signal closes
 * (no new requests, in-flight ones get 2 s) and resolves; a close that
 * takes longer than the shutdown deadline exits 1 (`untilStopSignal`).
 *
 * @returns the exit status: 0 after a clean close, 2 on a configuration error, 1 when start fails.
 */
export async function runStorageElementProcess(env: Record<string, string | undefined> = process.env): Promise<number> {
  const logger = createLogger('storage-element');
  let config: ReturnType<typeof loadStorageElementConfig>;
  let deadlineMs: number;
  try {
    config = loadStorageElementConfig(env);
    deadlineMs = shutdownDeadlineMs(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const stopping = untilStopSignal({ deadlineMs, logger });
  let se: Awaited<ReturnType<typeof startStorageElement>>;
  try {
    se = await startStorageElement(config, { logger });
  } catch (error) {
    logger.error({ err: error }, 'storage element failed to start');
    return 1;
  }
  // One line on stdout that supervisors and tests can wait for.
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: se.url, storage_id: config.storageId })}\n`);
  const stop = await stopping;
  logger.info({ signal: stop.signal }, 'closing storage element');
  stop.step('finish requests, close');
  await se.close();
  stop.closed();
  logger.info('storage element closed');
  return 0;
}

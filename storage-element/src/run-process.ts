import { ConfigError, createLogger } from '@polyvision/shared';
import { loadStorageElementConfig } from './config.ts';
import { startStorageElement } from './storage-element.ts';

/**
 * Runs an SE until SIGTERM/SIGINT: loads config from `env`, starts, prints
 * `storage element listening` (JSON log on stderr), and on a signal closes
 * (no new requests, in-flight ones get 2 s) and resolves.
 *
 * @returns the exit status: 0 after a clean close, 2 on a configuration error, 1 when start fails.
 */
export async function runStorageElementProcess(env: Record<string, string | undefined> = process.env): Promise<number> {
  const logger = createLogger('storage-element');
  let config: ReturnType<typeof loadStorageElementConfig>;
  try {
    config = loadStorageElementConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  let se: Awaited<ReturnType<typeof startStorageElement>>;
  try {
    se = await startStorageElement(config, { logger });
  } catch (error) {
    logger.error({ err: error }, 'storage element failed to start');
    return 1;
  }
  // One line on stdout that supervisors and tests can wait for.
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: se.url, storage_id: config.storageId })}\n`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'closing storage element');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await se.close();
  logger.info('storage element closed');
  return 0;
}

/**
 * `node core/src/ingest/main.ts`: one ingest replica, configured by the
 * environment (core/README.md, "Ingest"). Prints one JSON line
 * `{"event":"listening","url":…,"instance_id":…}` on stdout when ready;
 * SIGTERM/SIGINT close it gracefully (leadership released, in-flight
 * requests finished within the grace time).
 */
import { createLogger, loadConfigOrExit } from '@polyvision/shared';
import { startIngest } from './ingest-service.ts';
import { loadIngestSettings } from './options.ts';

export async function main(): Promise<void> {
  const settings = loadConfigOrExit(() => loadIngestSettings(process.env));
  const logger = createLogger('ingest', { instance_id: settings.instanceId });
  const ingest = await startIngest(settings, logger);
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', url: ingest.url, instance_id: settings.instanceId })}\n`,
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'ingest stopping');
    ingest.close().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'close failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

if (import.meta.main) {
  main().catch((error) => {
    process.stderr.write(`ingest failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}

/**
 * `pnpm demo` (= `pnpm polyvision demo`): the main job end to end in one
 * process (deploy/src/demo). Embedded by default; REDIS_URL, DATABASE_URL and
 * KAFKA_BROKERS switch to the real services.
 */
import { createLogger, PolyvisionError, silentLogger, ValidationError } from '@polyvision/shared';
import { DEMO_HELP, formatSummary, LiveView, parseDemoArgs, runDemo } from '../../demo/index.ts';
import { repoRoot } from '../../services/paths.ts';

/** Runs the demo; exit status 0 done, 1 the job or a service failed, 2 bad options or input. */
export async function run(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseDemoArgs>;
  try {
    options = parseDemoArgs(argv, process.cwd(), repoRoot);
  } catch (error) {
    process.stderr.write(`demo: ${(error as Error).message}\n\n${DEMO_HELP}`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(DEMO_HELP);
    return 0;
  }
  const controller = new AbortController();
  const stop = () => controller.abort(new PolyvisionError('aborted', 'interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const urls = {
    redisUrl: process.env.REDIS_URL || undefined,
    databaseUrl: process.env.DATABASE_URL || undefined,
    kafkaBrokers: process.env.KAFKA_BROKERS || undefined,
  };
  const real = Object.entries(urls)
    .filter(([, v]) => v)
    .map(([k]) => k);
  process.stdout.write(
    `Polyvision demo — ${real.length > 0 ? `real services: ${real.join(', ')}` : 'embedded (in-memory Redis and bus, PGlite)'}\n`,
  );
  const view = new LiveView(process.stdout, { plain: options.plain });
  try {
    // The services' own logs (JSON on stderr) only when asked for: LOG_LEVEL=info|debug.
    const logger = process.env.LOG_LEVEL ? createLogger('demo') : silentLogger;
    let printed = false;
    const result = await runDemo(options, urls, view, {
      signal: controller.signal,
      logger,
      ...(options.keep
        ? {
            hold: async (done) => {
              view.close();
              process.stdout.write(formatSummary(done, process.cwd()));
              printed = true;
              process.stdout.write(`\nServices kept running (--keep): ops page ${done.opsUrl}. Ctrl-C stops them.\n`);
              await new Promise<void>((resolve) =>
                controller.signal.addEventListener('abort', () => resolve(), { once: true }),
              );
            },
          }
        : {}),
    });
    view.close();
    if (!printed) process.stdout.write(formatSummary(result, process.cwd()));
    return 0;
  } catch (error) {
    view.close();
    const e = error as Error & { code?: string };
    process.stderr.write(`\ndemo failed: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    return error instanceof ValidationError || e.code?.startsWith('demo_calibration') ? 2 : 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

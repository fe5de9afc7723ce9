import { parseArgs } from 'node:util';
import {
  countingStage,
  ensureExecutionsTable,
  loadStageHandler,
  loadWorkerConfig,
  type StageHandler,
  startWorkerService,
} from '@polyvision/core';
import { createLogger, STAGES, type Stage } from '@polyvision/shared';
import { listenForStop, loadCommandConfig, parseCommandLine } from '../command-kit.ts';

const HELP = `Usage: pnpm polyvision worker --stages <list> [options]

Runs analysis stages: for each stage, a member of group
polyvision-worker-<stage> on polyvision.tasks.<stage>; results go back to
polyvision.jobs.commands. Tasks are claimed in PostgreSQL (stage_claims), so a
redelivered task does not run twice. Configured by environment variables
(core/README.md, "Worker"). SIGTERM or SIGINT: abort running tasks (they are
handed back to other workers), leave the groups, exit 0.

Options:
  --stages <a,b,...>     stages to serve: ${STAGES.join(', ')}        (required)
  --concurrency <n>      WORKER_CONCURRENCY: tasks per stage at once  [1]
  --topic-prefix <p>     POLYVISION_TOPIC_PREFIX                      [polyvision]
  --schema <name>        DATABASE_SCHEMA                              [public]
  --test-stage           serve the COUNTING TEST DOUBLE instead of the real stages
                         (sleeps, records each run in test_stage_executions)
  --test-sleep-ms <n>    sleep of the test double                     [50]
  -h, --help

Prints one JSON line {"event":"started","worker":...,"stages":[...]} on stdout when ready.
Exit status 2 on a usage or configuration error.
`;

/** `polyvision worker --stages …`: runs stages until SIGTERM/SIGINT. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommandLine('worker', HELP, () =>
    parseArgs({
      args: argv,
      options: {
        stages: { type: 'string' },
        concurrency: { type: 'string' },
        'topic-prefix': { type: 'string' },
        schema: { type: 'string' },
        'test-stage': { type: 'boolean' },
        'test-sleep-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }),
  );
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const stages = String(values.stages ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = stages.filter((s) => !(STAGES as readonly string[]).includes(s));
  if (stages.length === 0 || unknown.length > 0) {
    process.stderr.write(
      `worker: --stages needs a comma-separated list of ${STAGES.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}\n`,
    );
    return 2;
  }
  const sleepMs = Number(values['test-sleep-ms'] ?? 50);
  if (!Number.isInteger(sleepMs) || sleepMs < 0) {
    process.stderr.write('worker: --test-sleep-ms must be a non-negative integer\n');
    return 2;
  }
  const env: Record<string, string | undefined> = { ...process.env };
  if (typeof values.concurrency === 'string') env.WORKER_CONCURRENCY = values.concurrency;
  if (typeof values['topic-prefix'] === 'string') env.POLYVISION_TOPIC_PREFIX = values['topic-prefix'];
  if (typeof values.schema === 'string') env.DATABASE_SCHEMA = values.schema;
  const config = loadCommandConfig(() => loadWorkerConfig(env));
  if (typeof config === 'number') return config;
  const logger = createLogger('worker');
  const stopping = listenForStop(env, logger);
  if (typeof stopping === 'number') return stopping;
  const service = await startWorkerService(
    config,
    async (connections): Promise<StageHandler[]> => {
      if (values['test-stage']) {
        await ensureExecutionsTable(connections.db);
        return stages.map((stage) => countingStage(stage as Stage, { db: connections.db, sleepMs }));
      }
      // One context for all stages: they share one artifact store (storage elements when STORAGE_ELEMENTS is set).
      const context = { env, db: connections.db, redis: connections.redis, logger };
      return Promise.all(stages.map((stage) => loadStageHandler(stage as Stage, context)));
    },
    logger,
  );
  process.stdout.write(`${JSON.stringify({ event: 'started', worker: service.runtime.workerId, stages })}\n`);
  const stop = await stopping;
  stop.step('abort running tasks, close connections');
  await service.close();
  stop.closed();
  return 0;
}

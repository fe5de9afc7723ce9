import { parseArgs } from 'node:util';
import { loadOrchestratorConfig, startOrchestratorService } from '@polyvision/core';
import { ConfigError, createLogger } from '@polyvision/shared';

const HELP = `Usage: pnpm polyvision orchestrator [options]

Runs one orchestrator replica: a member of consumer group
polyvision-orchestrator over polyvision.jobs.commands (12 partitions); job
state in PostgreSQL, tasks through the transactional outbox, the reconciler
on one replica. HTTP: GET /api/v1/jobs[/:id], /metrics, /health/live,
/health/ready. Configured by environment variables (core/README.md,
"Orchestrator"); the options below override them. SIGTERM or SIGINT: stop
fetching, finish in-flight commands, commit, leave the group, exit 0.

Options:
  --http-port <n>       ORCHESTRATOR_HTTP_PORT (0 = any free port)   [8090]
  --instance-id <id>    ORCHESTRATOR_INSTANCE_ID                      [host:pid:random]
  --topic-prefix <p>    POLYVISION_TOPIC_PREFIX                       [polyvision]
  --schema <name>       DATABASE_SCHEMA                               [public]
  -h, --help

Real services when KAFKA_BROKERS, DATABASE_URL, REDIS_URL are set; otherwise
the in-memory bus and PGlite (one process only). Prints one JSON line
{"event":"listening","url":...,"instance":...} on stdout when ready.
Exit status 2 on a configuration error.
`;

const FLAGS = {
  'http-port': 'ORCHESTRATOR_HTTP_PORT',
  'instance-id': 'ORCHESTRATOR_INSTANCE_ID',
  'topic-prefix': 'POLYVISION_TOPIC_PREFIX',
  schema: 'DATABASE_SCHEMA',
} as const;

/** `polyvision orchestrator`: runs a replica until SIGTERM/SIGINT. */
export async function run(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        'http-port': { type: 'string' },
        'instance-id': { type: 'string' },
        'topic-prefix': { type: 'string' },
        schema: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`orchestrator: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const env: Record<string, string | undefined> = { ...process.env };
  for (const [flag, variable] of Object.entries(FLAGS)) {
    const value = values[flag];
    if (typeof value === 'string') env[variable] = value;
  }
  let config: ReturnType<typeof loadOrchestratorConfig>;
  try {
    config = loadOrchestratorConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const logger = createLogger('orchestrator');
  const service = await startOrchestratorService(config, logger);
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', url: service.http.url, instance: service.orchestrator.tuning.instanceId })}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await service.close();
  return 0;
}

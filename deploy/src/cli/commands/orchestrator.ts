import { parseArgs } from 'node:util';
import { loadOrchestratorConfig, startOrchestratorService } from '@polyvision/core';
import { createLogger } from '@polyvision/shared';
import { listenForStop, loadCommandConfig, parseCommandLine } from '../command-kit.ts';

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
  const parsed = parseCommandLine('orchestrator', HELP, () =>
    parseArgs({
      args: argv,
      options: {
        'http-port': { type: 'string' },
        'instance-id': { type: 'string' },
        'topic-prefix': { type: 'string' },
        schema: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }),
  );
  if (typeof parsed === 'number') return parsed;
  const env: Record<string, string | undefined> = { ...process.env };
  for (const [flag, variable] of Object.entries(FLAGS)) {
    const value = parsed.values[flag as keyof typeof FLAGS];
    if (typeof value === 'string') env[variable] = value;
  }
  const config = loadCommandConfig(() => loadOrchestratorConfig(env));
  if (typeof config === 'number') return config;
  const logger = createLogger('orchestrator');
  const stopping = listenForStop(env, logger);
  if (typeof stopping === 'number') return stopping;
  const service = await startOrchestratorService(config, logger);
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', url: service.http.url, instance: service.orchestrator.tuning.instanceId })}\n`,
  );
  const stop = await stopping;
  logger.info({ signal: stop.signal }, 'stopping');
  await service.close(stop.step);
  stop.closed();
  return 0;
}

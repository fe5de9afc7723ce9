import { parseArgs } from 'node:util';
import { exportLines, servicesDown, servicesStatus, servicesUp } from '../../services/index.ts';
import { hideKafkajsTimeoutWarning, lifecycleAction, parseCommandLine } from '../command-kit.ts';

const HELP = `Usage: pnpm polyvision services <up|down|status> [--json]

Real Redis, PostgreSQL, Apache Kafka (KRaft) and an S3 server (versitygw) on
127.0.0.1, without Docker.

  up      install what is missing (apt-get, Kafka jars from Maven Central,
          versitygw with go install), start what is not running, print export
          lines for REDIS_URL, DATABASE_URL, KAFKA_BROKERS, S3_ENDPOINT,
          S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY and S3_REGION. Idempotent.
          Use: eval "$(pnpm -s polyvision services up)"
  status  a real round trip with each service (PING, SELECT 1, metadata
          request, S3 GET /); exit status 0 only when all four answer
  down    stop them (and kill leftovers of this working folder)

Options:
  --json  print the result as JSON on stdout
  -h, --help

Environment (defaults in brackets):
  POLYVISION_SERVICES_DIR           working folder [<repo>/.work/services]
  POLYVISION_CACHE_DIR              jars, Maven and Go binaries [$HOME/.cache/polyvision]
  POLYVISION_REDIS_PORT             [56379]
  POLYVISION_POSTGRES_PORT          [55432]
  POLYVISION_KAFKA_PORT             [59092]
  POLYVISION_KAFKA_CONTROLLER_PORT  [59093]
  POLYVISION_S3_PORT                [59000]

Progress goes to stderr; only the export lines (or JSON) go to stdout.
`;

/** `polyvision services up|down|status [--json]`. */
export async function run(argv: string[]): Promise<number> {
  hideKafkajsTimeoutWarning();
  const parsed = parseCommandLine('services', HELP, () =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
    }),
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const action = lifecycleAction('services', HELP, positionals);
  if (typeof action === 'number') return action;
  const onProgress = (line: string) => process.stderr.write(`services: ${line}\n`);

  if (action === 'up') {
    const result = await servicesUp({ onProgress });
    const summary = Object.entries(result.outcomes)
      .map(([name, outcome]) => `${name} ${outcome}`)
      .join(', ');
    onProgress(`${summary} (${(result.elapsedMs / 1000).toFixed(1)} s)`);
    process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${exportLines(result.env)}\n`);
    return 0;
  }

  if (action === 'down') {
    const result = await servicesDown({ onProgress });
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else
      for (const [name, outcome] of Object.entries(result.outcomes))
        process.stdout.write(`${name.padEnd(8)} ${outcome}\n`);
    return 0;
  }

  const statuses = await servicesStatus({ onProgress });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(statuses, null, 2)}\n`);
  } else {
    for (const s of statuses) {
      const state = s.answering ? 'answering' : 'NOT answering';
      const pid = s.pid === null ? '' : ` pid ${s.pid}`;
      process.stdout.write(
        `${s.name.padEnd(8)} ${state.padEnd(13)} ${s.envVar}=${s.url}${pid} (${s.roundTripMs} ms: ${s.detail})\n`,
      );
    }
  }
  return statuses.every((s) => s.answering) ? 0 : 1;
}

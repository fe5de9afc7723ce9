import { parseArgs } from 'node:util';
import type { Stage } from '@polyvision/shared';
import { clusterDown, clusterStatus, clusterUp } from '../../cluster/index.ts';
import { hideKafkajsTimeoutWarning, lifecycleAction, parseCommandLine } from '../command-kit.ts';

const HELP = `Usage: pnpm polyvision cluster <up|down|status> [options]

A local cluster as separate processes on 127.0.0.1, against the real services
of 'pnpm polyvision services up' (started when REDIS_URL, DATABASE_URL and
KAFKA_BROKERS are not all set): 3 storage elements in 3 datacenters
(dc-east, dc-west, dc-north; folders in .work/cluster/), 2 orchestrators,
2 ingest replicas, 1 worker.

  up      start it (idempotent: a running, ready cluster is kept); prints the
          URLs and an edge token for the tus endpoint
  status  pid and /health/ready of every process; exit 0 only when all are ready
  down    stop every process (ingest, orchestrators, workers, SEs), then kill
          anything still running in the cluster folder; services stay up

Options:
  --test-stages   workers run the counting test double instead of the real stages
  --edge          also run edge-1: records one match from synthetic cameras
                  (rendered once), stitches and uploads it through ingest-1
  --edge-duration <s>  length of that match in seconds               [20]
  --workers <n>   worker processes                                 [1]
  --stages <a,b>  stages the workers serve    [those with a handler module;
                                               all with --test-stages]
  --purge         (down) also delete the cluster folder (SE data, logs)
  --json          print the result as JSON on stdout
  -h, --help

Environment (defaults in brackets):
  POLYVISION_CLUSTER_DIR          working folder            [<repo>/.work/cluster]
  POLYVISION_CLUSTER_BASE_PORT    SE n: base+n, ingest n: base+100+n,
                                  orchestrator n: base+200+n [28000]
  POLYVISION_CLUSTER_WORKERS      [1]
  POLYVISION_CLUSTER_TEST_STAGES  on|off                     [off]
  POLYVISION_CLUSTER_EDGE         on|off (as --edge)         [off]
  POLYVISION_CLUSTER_LOG_LEVEL    LOG_LEVEL of the processes [info]

Logs: <dir>/<process>/<process>.log. Progress goes to stderr.
`;

/** `polyvision cluster up|down|status`. */
export async function run(argv: string[]): Promise<number> {
  hideKafkajsTimeoutWarning();
  const parsed = parseCommandLine('cluster', HELP, () => parse(argv));
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const action = lifecycleAction('cluster', HELP, positionals);
  if (typeof action === 'number') return action;
  const workers = values.workers === undefined ? undefined : Number(values.workers);
  if (workers !== undefined && !Number.isInteger(workers)) {
    process.stderr.write(`cluster: --workers must be an integer, got ${values.workers}\n`);
    return 2;
  }
  const onProgress = (line: string) => process.stderr.write(`cluster: ${line}\n`);
  const options = {
    onProgress,
    ...(values['test-stages'] ? { testStages: true } : {}),
    ...(workers === undefined ? {} : { workers }),
    ...(values.edge ? { edge: true } : {}),
    ...(values['edge-duration'] === undefined ? {} : { edgeMatchDurationS: Number(values['edge-duration']) }),
    ...(typeof values.stages === 'string' ? { stages: values.stages.split(',').map((s) => s.trim()) as Stage[] } : {}),
  };

  if (action === 'up') {
    const result = await clusterUp(options);
    if (values.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return 0;
    }
    const { state } = result;
    process.stdout.write(`cluster ${result.outcome} (${(result.elapsedMs / 1000).toFixed(1)} s)\n`);
    for (const p of state.processes) {
      process.stdout.write(`${p.name.padEnd(20)} pid ${String(p.pid).padEnd(8)} ${p.url ?? '-'}\n`);
    }
    const ingest = state.processes.find((p) => p.role === 'ingest');
    const orchestrator = state.processes.find((p) => p.role === 'orchestrator');
    process.stdout.write(
      `\ntus uploads: ${ingest?.url}/api/v1/uploads (Authorization: Bearer ${state.edgeToken}, organization ${state.organizationId})\n` +
        `jobs:        ${orchestrator?.url}/api/v1/jobs (the edge token: its organization; operator token: all)\n` +
        `operator:    Bearer ${state.operatorToken} (jobs, ${ingest?.url}/ops, /metrics, the edge's status API)\n` +
        (state.edgeMatchId
          ? `edge:        recording match ${state.edgeMatchId} (status: ${state.processes.find((p) => p.role === 'edge')?.url}/api/v1/status)\n`
          : ''),
    );
    return 0;
  }

  if (action === 'down') {
    const result = await clusterDown(options, { purge: values.purge === true });
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else {
      for (const [name, outcome] of Object.entries(result.stopped))
        process.stdout.write(`${name.padEnd(20)} ${outcome}\n`);
      if (result.leftoversKilled.length > 0)
        process.stdout.write(`leftovers killed: ${result.leftoversKilled.join(', ')}\n`);
    }
    return 0;
  }

  const status = await clusterStatus(options);
  if (!status) {
    process.stdout.write(values.json ? 'null\n' : 'no cluster recorded (run: pnpm polyvision cluster up)\n');
    return 1;
  }
  if (values.json) process.stdout.write(`${JSON.stringify(status.processes, null, 2)}\n`);
  else
    for (const p of status.processes) {
      const state = p.ready ? 'ready' : p.alive ? 'NOT ready' : 'DOWN';
      process.stdout.write(
        `${p.name.padEnd(20)} ${state.padEnd(10)} pid ${String(p.pid).padEnd(8)} ${p.url ?? '-'} (${p.detail})\n`,
      );
    }
  return status.processes.every((p) => p.ready) ? 0 : 1;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      'test-stages': { type: 'boolean' },
      workers: { type: 'string' },
      stages: { type: 'string' },
      edge: { type: 'boolean' },
      'edge-duration': { type: 'string' },
      purge: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

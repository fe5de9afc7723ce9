import { parseArgs } from 'node:util';
import {
  createDatabase,
  createMessageBus,
  getJob,
  JobCommandClient,
  type JobView,
  listJobs,
  loadOrchestratorConfig,
} from '@polyvision/core';
import { type JobStatus, PolyvisionError, STAGES, type Stage } from '@polyvision/shared';
import { loadCommandConfig, parseCommandLine } from '../command-kit.ts';

const HELP = `Usage: pnpm polyvision jobs <command> [options]

Operate jobs of the orchestrator. Reads job state from PostgreSQL
(DATABASE_URL, DATABASE_SCHEMA) and sends commands to
polyvision.jobs.commands (KAFKA_BROKERS, POLYVISION_TOPIC_PREFIX).

Commands:
  list [--status S] [--org ID] [--match ID] [--limit N] [--json]
                                 newest first; S: queued|running|completed|failed|cancelled
  show ID [--json]               one job with its stages, attempts, outputs, errors
  reprocess ID --from STAGE --model-version V [--reason TEXT] [--segments A-B]
                                 re-run from STAGE (and everything after it) with model version V;
                                 a match job: only segments A..B (sequential stages also after B)
  cancel ID [--reason TEXT] [--segments A-B]
                                 stop dispatching; workers abort its running tasks;
                                 a match job: only segments A..B (the match goes on without them)
  end ID [--last-slot N]         a match job: the match is over (as the edge's end marker says)
  -h, --help

Exit status: 0 done, 1 job not found or refused, 2 usage or configuration error.
`;

/** `polyvision jobs list|show|reprocess|cancel|end`. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommandLine('jobs', HELP, () => parse(argv));
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [command, id] = positionals;
  if (!command) {
    process.stdout.write(HELP);
    return 2;
  }
  const config = loadCommandConfig(() => loadOrchestratorConfig());
  if (typeof config === 'number') return config;
  if (!config.DATABASE_URL) {
    process.stderr.write('jobs: DATABASE_URL is required (the job state lives in PostgreSQL)\n');
    return 2;
  }
  const db = createDatabase({ databaseUrl: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, maxConnections: 2 });
  try {
    switch (command) {
      case 'list': {
        const page = await listJobs(db, {
          ...(values.status ? { status: values.status as JobStatus } : {}),
          ...(values.org ? { organization_id: values.org } : {}),
          ...(values.match ? { match_id: values.match } : {}),
          limit: values.limit ? Number(values.limit) : 50,
        });
        if (values.json) process.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
        else for (const job of page.jobs) process.stdout.write(`${summary(job)}\n`);
        return 0;
      }
      case 'show': {
        if (!id) return usage('show needs a job id');
        const job = await getJob(db, id);
        if (!job) return notFound(id);
        process.stdout.write(values.json ? `${JSON.stringify(job, null, 2)}\n` : details(job));
        return 0;
      }
      case 'reprocess':
      case 'cancel':
      case 'end': {
        if (!id) return usage(`${command} needs a job id`);
        const segments = values.segments === undefined ? undefined : parseSegments(values.segments);
        if (segments === null) return usage('--segments needs a range A-B of segment indexes (A <= B)');
        const lastSlot = values['last-slot'] === undefined ? undefined : Number(values['last-slot']);
        if (lastSlot !== undefined && !(Number.isSafeInteger(lastSlot) && lastSlot >= 0)) {
          return usage('--last-slot needs a slot number');
        }
        const job = await getJob(db, id);
        if (!job) return notFound(id);
        if ((segments || command === 'end') && job.kind !== 'match') {
          return usage(`job ${id} is not a match job (--segments and end apply to match jobs)`);
        }
        if (command === 'reprocess') {
          if (!values.from || !(STAGES as readonly string[]).includes(values.from)) {
            return usage(`reprocess needs --from one of ${STAGES.join(', ')}`);
          }
          if (!values['model-version']) return usage('reprocess needs --model-version');
          if (!job.stages.some((s) => s.stage === values.from)) return usage(`job ${id} has no stage ${values.from}`);
          if (!segments && (job.status === 'running' || job.status === 'queued')) {
            process.stderr.write(`jobs: job ${id} is ${job.status}; cancel it or wait before reprocessing\n`);
            return 1;
          }
        }
        const bus = createMessageBus(config.KAFKA_BROKERS, 'polyvision-jobs-cli');
        if (bus.kind !== 'kafka') {
          process.stderr.write('jobs: KAFKA_BROKERS is required to send commands\n');
          return 2;
        }
        const producer = bus.createProducer();
        try {
          const client = new JobCommandClient(producer, config.POLYVISION_TOPIC_PREFIX);
          if (command === 'cancel') await client.cancel(job, values.reason, segments);
          else if (command === 'end') await client.end(job, 'operator', lastSlot);
          else {
            const from = values.from as Stage;
            const versions: Partial<Record<Stage, string>> = {};
            const downstream = job.stages.map((s) => s.stage as Stage);
            for (const stage of downstream.slice(downstream.indexOf(from))) versions[stage] = values['model-version']!;
            await client.reprocess(job, from, versions, values.reason, segments);
          }
        } finally {
          await producer.close();
          await bus.close();
        }
        process.stdout.write(`${command} sent for job ${id}\n`);
        return 0;
      }
      default:
        return usage(`unknown command ${command}`);
    }
  } catch (error) {
    if (error instanceof PolyvisionError && error.code === 'invalid_filter') return usage(error.message);
    throw error;
  } finally {
    await db.close();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      status: { type: 'string' },
      org: { type: 'string' },
      match: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      from: { type: 'string' },
      'model-version': { type: 'string' },
      reason: { type: 'string' },
      segments: { type: 'string' },
      'last-slot': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/** `A-B` (or `A`) as a segment range; null when malformed. */
function parseSegments(text: string): { from_index: number; to_index: number } | null {
  const m = /^(\d{1,7})(?:-(\d{1,7}))?$/.exec(text.trim());
  if (!m) return null;
  const from = Number(m[1]);
  const to = m[2] === undefined ? from : Number(m[2]);
  return from <= to ? { from_index: from, to_index: to } : null;
}

function usage(message: string): number {
  process.stderr.write(`jobs: ${message}\n`);
  return 2;
}

function notFound(id: string): number {
  process.stderr.write(`jobs: no job ${id}\n`);
  return 1;
}

function summary(job: JobView): string {
  return [
    job.job_id,
    job.status.padEnd(9),
    `${job.progress_percent.toFixed(0).padStart(3)}%`,
    `${job.organization_id}:${job.match_id}`,
    job.created_at,
    ...(job.match ? [matchLine(job)] : []),
  ].join('  ');
}

/** A match job's progress in one line: segments, per-stage processed, lag, gaps. */
function matchLine(job: JobView): string {
  const m = job.match!;
  const processed = Object.entries(m.processed)
    .map(([stage, n]) => `${stage} ${n}`)
    .join(' ');
  return [
    m.live ? 'live' : `ended (${m.ended_by}) at segment ${m.final_index}`,
    `segments ${m.segments_received}`,
    `processed ${processed}`,
    `lag ${m.lag_segments} segments (${m.lag_s} s)`,
    ...(m.gaps.length ? [`gaps ${m.gaps.join(',')}`] : []),
    ...(m.segments_missing.length ? [`missing ${m.segments_missing.join(',')}`] : []),
    ...(m.segments_cancelled.length ? [`cancelled ${m.segments_cancelled.join(',')}`] : []),
    ...(m.segments_failed.length ? [`failed ${m.segments_failed.join(',')}`] : []),
  ].join('  ');
}

function details(job: JobView): string {
  const lines = [
    `job ${job.job_id}  ${job.status}  ${job.progress_percent}%`,
    `match ${job.organization_id}:${job.match_id}  created ${job.created_at}${job.finished_at ? `  finished ${job.finished_at}` : ''}`,
  ];
  if (job.match) lines.push(`match ${matchLine(job)}`);
  if (job.error) lines.push(`error ${JSON.stringify(job.error)}`);
  for (const s of job.stages) {
    lines.push(
      `  ${s.segment_index === null ? '' : `#${String(s.segment_index).padEnd(4)} `}${s.stage.padEnd(8)} ${s.status.padEnd(10)} attempt ${s.attempt}/${s.max_attempts}  model ${s.model_version}  ${Math.round(s.progress * 100)}%${s.error ? `  error ${JSON.stringify(s.error)}` : ''}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

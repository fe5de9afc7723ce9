/**
 * Soak benchmark (issue 20 item 6): real processes on real services, real
 * stages, a backlog, and faults while it drains.
 *
 * Private Redis, PostgreSQL and Kafka (test/chaos/services.ts, their own
 * folder and ports), a ChaosCluster of 3 storage elements, 3 orchestrators,
 * 2 ingest replicas and 2 workers running the REAL stages; `--matches`
 * synthetic matches submitted at once through tus (more than the workers
 * can take: the last ones wait in Kafka for minutes, longer than the old
 * 600 s stage deadline); then, every `--fault-interval-s` while matches are
 * unfinished, a fault: kill -9 of a random orchestrator (restarted 3 s
 * later) or of the worker running a stage (restarted with the same
 * WORKER_ID), one Redis restart and one PostgreSQL restart among them. After
 * the last fault the cluster drains until every match is finished or
 * `--max-s` since the submission has passed. Counted from the database and
 * the storage elements (test/chaos/census.ts): failed, lost (a match with no
 * job, or a catalogued file missing or corrupt), stages completed twice,
 * stuck (unfinished at the end), submit→ready p50/max, throughput.
 *
 *   node bench/chaos/soak.ts [--matches 12] [--match-s 4] [--faults 8] [--fault-interval-s 60] [--max-s 1800]
 *
 * CHAOS_KEEP_DIR=1 keeps the cluster's logs. Writes bench/results/chaos-soak.json.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { censusPool, percentile, takeCensus } from '../../test/chaos/census.ts';
import { ChaosCluster, FAST_LIVENESS_ENV, freeBasePort } from '../../test/chaos/cluster.ts';
import { renderSyntheticPanorama, submitMatch } from '../../test/chaos/match.ts';
import { ChaosServices } from '../../test/chaos/services.ts';

const { values } = parseArgs({
  options: {
    matches: { type: 'string', default: '12' },
    'match-s': { type: 'string', default: '4' },
    faults: { type: 'string', default: '8' },
    'fault-interval-s': { type: 'string', default: '60' },
    'max-s': { type: 'string', default: '1800' },
    'services-port': { type: 'string', default: '65400' },
  },
});
const matches = Number(values.matches);
const matchS = Number(values['match-s']);
const faults = Number(values.faults);
const faultIntervalMs = Number(values['fault-interval-s']) * 1000;
const maxMs = Number(values['max-s']) * 1000;
const log = (line: string) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const services = new ChaosServices({ workDir: '/tmp/chaos-soak-svc', basePort: Number(values['services-port']) });
const workDir = path.join(tmpdir(), `chaos-soak-${Date.now().toString(36)}`);
const env = await services.up();
const cluster = await ChaosCluster.start({
  services: env,
  workDir,
  basePort: await freeBasePort(),
  topicPrefix: `soak-${Date.now().toString(36)}`,
  databaseSchema: `soak_${Date.now().toString(36)}`,
  env: FAST_LIVENESS_ENV,
  onProgress: log,
});
const db = censusPool(cluster);
/** Stops the cluster and the services once, on the normal path or on SIGINT/SIGTERM. */
let cleaned: Promise<void> | undefined;
const cleanup = () => {
  cleaned ??= (async () => {
    await db.end().catch(() => {});
    await cluster.close();
    if (process.env.CHAOS_KEEP_DIR !== '1') await rm(workDir, { recursive: true, force: true });
    await services.down();
  })();
  return cleaned;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the cluster and the services`);
    void cleanup().finally(() => process.exit(130));
  });
}
const load = () => os.loadavg().map((v) => Math.round(v * 10) / 10);
const loadSamples: number[] = [];
const faultLog: Array<{ atS: number; fault: string; detail?: unknown }> = [];
try {
  const panorama = await renderSyntheticPanorama(path.join(workDir, 'synthetic'), { durationS: matchS });
  const startedAt = Date.now();
  const at = () => Math.round((Date.now() - startedAt) / 100) / 10;
  const ids: string[] = [];
  for (let i = 0; i < matches; i++)
    ids.push(await submitMatch(cluster, panorama, `soak-${i}-${Date.now().toString(36)}`));
  log(`${matches} matches of ${matchS} s submitted in ${at()} s; load ${load().join(' ')}`);

  /** Matches not finished yet (a job not yet in the database counts as unfinished). */
  const unfinished = async () =>
    ids.length -
    Number(
      (
        await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM jobs WHERE job_id = ANY($1) AND status IN ('completed', 'failed', 'cancelled')`,
          [ids],
        )
      ).rows[0]?.n ?? 0,
    );
  // The service restarts come early (faults 3 and 5), so that a short run has them too.
  const plan = Array.from({ length: Math.max(faults, 5) }, (_, i) =>
    i === 2 ? 'redis' : i === 4 ? 'postgres' : i % 2 === 0 ? 'orchestrator' : 'worker',
  );
  for (const [i, fault] of plan.entries()) {
    await sleep(faultIntervalMs);
    loadSamples.push(os.loadavg()[0] ?? 0);
    if (i > 4 && (await unfinished().catch(() => 1)) === 0) break;
    if (fault === 'redis' || fault === 'postgres') {
      const restart = await services.restart(fault);
      faultLog.push({ atS: at(), fault: `${fault} restart`, detail: restart });
    } else if (fault === 'orchestrator') {
      const names = cluster.names('orchestrator');
      const victim = names[Math.floor(Math.random() * names.length)] as string;
      await cluster.kill(victim);
      faultLog.push({ atS: at(), fault: `kill -9 ${victim}` });
      await sleep(3_000);
      await cluster.restart(victim);
    } else {
      const { rows } = await db.query<{ worker_id: string; job_id: string; stage: string; attempt: number }>(
        `SELECT worker_id, job_id, stage, attempt FROM job_stages
         WHERE job_id = ANY($1) AND status = 'running' AND worker_id IS NOT NULL ORDER BY random() LIMIT 1`,
        [ids],
      );
      const running = rows[0];
      const victim = running?.worker_id ?? cluster.names('worker')[0]!;
      await cluster.kill(victim);
      faultLog.push({ atS: at(), fault: `kill -9 ${victim}`, detail: running ?? 'no stage running' });
      await cluster.restart(victim);
    }
    log(
      `${faultLog.at(-1)?.fault} at ${at()} s; ${await unfinished().catch(() => '?')} unfinished; load ${load().join(' ')}`,
    );
  }
  while (Date.now() - startedAt < maxMs) {
    const left = await unfinished().catch(() => -1);
    if (left === 0) break;
    loadSamples.push(os.loadavg()[0] ?? 0);
    log(`draining: ${left} unfinished at ${at()} s; load ${load().join(' ')}`);
    await sleep(15_000);
  }
  const wallMs = Date.now() - startedAt;
  const census = await takeCensus(cluster, db, ids);
  const inDb = Number(
    (await db.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE job_id = ANY($1)`, [ids])).rows[0]?.n,
  );
  const queue = await db.query<{ max_wait_s: number; span_s: number }>(
    `SELECT max(extract(epoch FROM c.first_claim - j.created_at))::double precision AS max_wait_s,
       extract(epoch FROM max(j.finished_at) - min(j.created_at))::double precision AS span_s
     FROM jobs j JOIN LATERAL (SELECT min(claimed_at) AS first_claim FROM stage_claims WHERE job_id = j.job_id) c ON true
     WHERE j.job_id = ANY($1)`,
    [ids],
  );
  // The old stage deadline (600 s) counted from dispatch: the longest a task of these jobs waited in Kafka for a worker.
  const waited = await db.query<{ max_s: number }>(
    `SELECT max(extract(epoch FROM c.claimed_at - s.dispatched_at))::double precision AS max_s
     FROM job_stages s JOIN stage_claims c ON c.task_message_id = s.task_message_id
     WHERE s.job_id = ANY($1)`,
    [ids],
  );
  const spanS = Number(queue.rows[0]?.span_s ?? wallMs / 1000);
  const result = {
    measured_at: new Date().toISOString(),
    command: `node bench/chaos/soak.ts --matches ${matches} --match-s ${matchS} --faults ${faults} --fault-interval-s ${faultIntervalMs / 1000} --max-s ${maxMs / 1000}`,
    host: {
      cpus: os.cpus().length,
      load_average_mean_1m:
        Math.round((loadSamples.reduce((a, b) => a + b, 0) / Math.max(1, loadSamples.length)) * 10) / 10,
    },
    cluster: '3 SE, 3 orchestrators, 2 ingest, 2 workers (real stages), private Redis/PostgreSQL/Kafka',
    liveness: FAST_LIVENESS_ENV,
    matches_submitted: matches,
    match_seconds_each: matchS,
    jobs_in_database: inDb,
    completed: census.completed,
    failed: census.failed,
    lost: matches - inDb + census.filesMissing.length + census.filesCorrupt.length,
    stages_completed_twice: census.stagesCompletedTwice.length,
    stuck: census.unfinished,
    reruns_not_recorded: census.rerunsNotRecorded.length,
    stage_reruns: census.reruns.length,
    files_checked: census.filesChecked,
    submit_to_ready_ms: {
      p50: percentile(census.submitToReadyMs, 50),
      max: percentile(census.submitToReadyMs, 100),
    },
    longest_wait_for_first_claim_s: Math.round(Number(queue.rows[0]?.max_wait_s ?? 0)),
    longest_task_wait_dispatch_to_claim_s: Math.round(Number(waited.rows[0]?.max_s ?? 0)),
    throughput: {
      matches_per_min: Math.round((census.completed / (spanS / 60)) * 100) / 100,
      match_seconds_per_wall_second: Math.round(((census.completed * matchS) / spanS) * 1000) / 1000,
    },
    faults: faultLog,
    failures: census.failures,
    files_missing: census.filesMissing,
    files_corrupt: census.filesCorrupt,
    twice: census.stagesCompletedTwice,
    reruns: census.reruns,
    wall_ms: wallMs,
  };
  const out = new URL('../results/chaos-soak.json', import.meta.url);
  await mkdir(new URL('.', out), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await cleanup();
}

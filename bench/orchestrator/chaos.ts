/**
 * Chaos benchmark: 1,000 jobs (detect → track → vcam ∥ analyze → encode) on
 * 3 orchestrator processes while random replicas are killed with SIGKILL
 * (10 kills, a replacement started after each). Lost and duplicated work are
 * counted from PostgreSQL: the jobs table (every submitted job completed) and
 * the counting test stage's executions (each stage of each job ran once).
 *
 *   node bench/orchestrator/chaos.ts [--jobs 1000] [--kills 10] [--kill-interval-ms 4000] [--session-timeout-ms 6000]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ALL_STAGES } from '../../core/test/orchestrator/support/harness.ts';
import { benchWorld, writeResult } from './world.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000' },
    kills: { type: 'string', default: '10' },
    'kill-interval-ms': { type: 'string', default: '4000' },
    'session-timeout-ms': { type: 'string', default: '6000' },
  },
});
const jobs = Number(values.jobs);
const kills = Number(values.kills);
const killIntervalMs = Number(values['kill-interval-ms']);
const sessionTimeoutMs = Number(values['session-timeout-ms']);

const world = await benchWorld({ sessionTimeoutMs });
const { harness: h } = world;
try {
  for (let i = 0; i < 3; i++) await world.startReplica();
  await world.spreadOver(world.replicas.map((r) => r.instance));
  await h.startWorker({ sleepMs: 5 });
  const startedAt = Date.now();
  const ids = await h.submit(jobs);
  const killed: Array<{ atMs: number; instance: string }> = [];
  for (let k = 0; k < kills; k++) {
    await sleep(killIntervalMs);
    const alive = world.replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
    const victim = alive[Math.floor(Math.random() * alive.length)]!;
    victim.child.kill('SIGKILL');
    killed.push({ atMs: Date.now() - startedAt, instance: victim.instance });
    process.stderr.write(`kill ${k + 1} at ${Date.now() - startedAt} ms: ${victim.instance}\n`);
    await victim.exited;
    world.replicas.splice(world.replicas.indexOf(victim), 1);
    await world.startReplica();
  }
  await h.waitForStatus(ids, 'completed', 900_000).catch((error: unknown) => {
    process.stderr.write(`${(error as Error).message}\n`);
  });
  const statuses = await h.jobStatuses(ids);
  const executions = await h.executions(ids);
  let duplicated = 0;
  let missing = 0;
  for (const id of ids) {
    for (const stage of ALL_STAGES) {
      const n = executions.get(`${id}:${stage}`) ?? 0;
      if (n === 0) missing += 1;
      if (n > 1) duplicated += n - 1;
    }
  }
  const counts = await h.db.query<{ processed: string }>(`SELECT count(*) AS processed FROM processed_messages`);
  await writeResult('orchestrator-chaos', {
    measured_at: new Date().toISOString(),
    command: `node bench/orchestrator/chaos.ts --jobs ${jobs} --kills ${kills} --kill-interval-ms ${killIntervalMs} --session-timeout-ms ${sessionTimeoutMs}`,
    jobs_submitted: jobs,
    jobs_in_database: statuses.size,
    jobs_completed: [...statuses.values()].filter((s) => s === 'completed').length,
    jobs_lost: jobs - [...statuses.values()].filter((s) => s === 'completed').length,
    stage_runs_expected: jobs * ALL_STAGES.length,
    stage_runs_counted: [...executions.values()].reduce((a, b) => a + b, 0),
    stage_runs_missing: missing,
    stage_runs_duplicated: duplicated,
    commands_processed: Number(counts.rows[0]!.processed),
    kills: killed,
    wall_ms: Date.now() - startedAt,
  });
} finally {
  await world.close();
}

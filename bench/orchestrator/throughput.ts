/**
 * Throughput benchmark: stage transitions per second with the counting test
 * stage (no sleep) on 1 and on 3 orchestrator processes (the baseline and
 * the measure, same run), and the latency from a worker's `stage.completed`
 * to the next task published by the outbox relay (Kafka CreateTime of both
 * records), p50 / p99.
 *
 *   node bench/orchestrator/throughput.ts [--jobs 200] [--replicas 1,3] [--clients platformatic,kafkajs]
 *
 * Each Kafka client runs with the orchestrator defaults it ships with
 * (platformatic 3 s / 0.5 s, kafkajs 10 s / 1 s). `time_shares` splits each
 * stage transition (from the record timestamps and `processed_messages`):
 * `commands`: a worker's `stage.completed` written → the orchestrator's
 * transaction starts (Kafka delivery of the commands topic, waiting for a
 * handler); `transition`: transaction start → the next task written (the
 * PostgreSQL transaction, the outbox relay and its produce); `worker`: the
 * task written → that stage's `stage.completed` written (tasks topic delivery,
 * claim, the counting stage, the report).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type KafkaClientName, kafkaClientName } from '../../core/src/bus/create-bus.ts';
import { STAGE_DEPENDENCIES } from '../../core/src/orchestrator/contracts/stages.ts';
import { ALL_STAGES } from '../../core/test/orchestrator/support/harness.ts';
import { waitFor } from '../../test/support/index.ts';
import { benchWorld, summarize, writeResult } from './world.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '200' },
    replicas: { type: 'string', default: '1,3' },
    'paced-jobs': { type: 'string', default: '60' },
    'pace-per-s': { type: 'string', default: '4' },
    clients: { type: 'string', default: 'platformatic' },
  },
});
const clients = String(values.clients)
  .split(',')
  .map((c) => kafkaClientName(c));
const SESSION: Record<KafkaClientName, { sessionTimeoutMs: number; heartbeatIntervalMs: number }> = {
  platformatic: { sessionTimeoutMs: 3_000, heartbeatIntervalMs: 500 },
  kafkajs: { sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1_000 },
};
const jobs = Number(values.jobs);
const replicaCounts = String(values.replicas).split(',').map(Number);
const pacedJobs = Number(values['paced-jobs']);
const pacePerS = Number(values['pace-per-s']);

// Saturated runs (all jobs at once) on each replica count, then a paced run on
// the largest count for the latency without queueing.
const runs = clients.flatMap((client) => [
  ...replicaCounts.map((replicas) => ({ client, replicas, jobs, ratePerS: 0 })),
  ...(pacedJobs > 0 ? [{ client, replicas: Math.max(...replicaCounts), jobs: pacedJobs, ratePerS: pacePerS }] : []),
]);
const measures: Record<string, unknown>[] = [];
for (const { client, replicas: replicaCount, jobs, ratePerS } of runs) {
  const world = await benchWorld({ ...SESSION[client], client });
  const { harness: h } = world;
  try {
    for (let i = 0; i < replicaCount; i++) await world.startReplica();
    await world.spreadOver(world.replicas.map((r) => r.instance));
    const completions = await h.collect(`${h.prefix}.jobs.commands`);
    const tasks = await Promise.all(ALL_STAGES.map((stage) => h.collect(`${h.prefix}.tasks.${stage}`)));
    await h.startWorker({ sleepMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // consumers joined
    const startedAt = Date.now();
    const ids: string[] = [];
    if (ratePerS === 0) ids.push(...(await h.submit(jobs)));
    else {
      for (let i = 0; i < jobs; i++) {
        ids.push(...(await h.submit(1)));
        await new Promise((resolve) => setTimeout(resolve, 1000 / ratePerS));
      }
    }
    await h.waitForStatus(ids, 'completed', 600_000);
    const wallMs = Date.now() - startedAt;
    const span = await h.db.query<{ ms: number }>(
      `SELECT extract(epoch FROM max(finished_at) - min(created_at)) * 1000 AS ms FROM jobs WHERE job_id = ANY($1::text[])`,
      [ids],
    );
    const spanMs = Number(span.rows[0]!.ms);
    await waitFor(() => tasks.flat().length >= jobs * ALL_STAGES.length, { timeoutMs: 30_000 });
    const completedAt = new Map<string, number>();
    const completionIds = new Map<string, string>();
    for (const record of completions) {
      const message = JSON.parse(record.value) as { type: string; job_id: string; stage: string; message_id: string };
      if (message.type === 'stage.completed') {
        completedAt.set(`${message.job_id}:${message.stage}`, record.timestampMs);
        completionIds.set(`${message.job_id}:${message.stage}`, message.message_id);
      }
    }
    const handled = await h.db.query<{ message_id: string; at_ms: number }>(
      `SELECT message_id, extract(epoch FROM processed_at) * 1000 AS at_ms FROM processed_messages
       WHERE job_id = ANY($1::text[]) AND type = 'stage.completed'`,
      [ids],
    );
    const handledAt = new Map(handled.rows.map((r) => [r.message_id, Number(r.at_ms)]));
    const segments = { commands: [] as number[], transition: [] as number[], worker: [] as number[] };
    const latencies: number[] = [];
    for (const record of tasks.flat()) {
      const task = JSON.parse(record.value) as {
        job_id: string;
        stage: keyof typeof STAGE_DEPENDENCIES;
        attempt: number;
      };
      const deps = STAGE_DEPENDENCIES[task.stage].filter((d) => ALL_STAGES.includes(d));
      if (deps.length === 0 || task.attempt !== 1) continue;
      const readyKey = deps
        .map((d) => `${task.job_id}:${d}`)
        .reduce((a, b) => ((completedAt.get(a) ?? 0) >= (completedAt.get(b) ?? 0) ? a : b));
      const ready = completedAt.get(readyKey) ?? Number.NaN;
      if (Number.isFinite(ready)) latencies.push(record.timestampMs - ready);
      const handledMs = handledAt.get(completionIds.get(readyKey) ?? '');
      const doneMs = completedAt.get(`${task.job_id}:${task.stage}`);
      if (Number.isFinite(ready) && handledMs !== undefined && doneMs !== undefined) {
        segments.commands.push(handledMs - ready);
        segments.transition.push(record.timestampMs - handledMs);
        segments.worker.push(doneMs - record.timestampMs);
      }
    }
    const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / Math.max(1, list.length);
    const means = {
      commands: mean(segments.commands),
      transition: mean(segments.transition),
      worker: mean(segments.worker),
    };
    const cycleMs = means.commands + means.transition + means.worker;
    const transitions = jobs * ALL_STAGES.length;
    const measure = {
      kafka_client: client,
      ...SESSION[client],
      replicas: replicaCount,
      jobs,
      submitted: ratePerS === 0 ? 'all at once' : `${ratePerS} jobs/s`,
      stage_transitions: transitions,
      span_ms: Math.round(spanMs),
      wall_ms: wallMs,
      transitions_per_s: Math.round((transitions / spanMs) * 1000 * 10) / 10,
      completed_to_next_task_ms: summarize(latencies),
      transition_cycle_mean_ms: Math.round(cycleMs),
      time_shares: Object.fromEntries(
        Object.entries(means).map(([part, ms]) => [
          part,
          { mean_ms: Math.round(ms), share: Math.round((ms / cycleMs) * 100) / 100 },
        ]),
      ),
      transitions_measured: segments.worker.length,
      load_average: loadavg().map((l) => Math.round(l * 100) / 100),
    };
    process.stderr.write(`${JSON.stringify(measure)}\n`);
    measures.push(measure);
  } finally {
    await world.close();
  }
}
const base = measures[0] as { transitions_per_s: number } | undefined; // 1 replica, saturated: the baseline
await writeResult(`orchestrator-throughput${clients.length > 1 ? '-clients' : ''}`, {
  measured_at: new Date().toISOString(),
  command: `node bench/orchestrator/throughput.ts --jobs ${jobs} --replicas ${replicaCounts.join(',')} --paced-jobs ${pacedJobs} --pace-per-s ${pacePerS} --clients ${clients.join(',')}`,
  worker:
    'one in-process WorkerRuntime, counting test stage without sleep, 4 task partitions per stage, 4 tasks at once',
  measures: measures.map((m) => ({
    ...m,
    ratio_to_first: base
      ? Math.round(((m as { transitions_per_s: number }).transitions_per_s / base.transitions_per_s) * 100) / 100
      : null,
  })),
});

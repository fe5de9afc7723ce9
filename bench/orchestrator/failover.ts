/**
 * Failover benchmark: 3 orchestrator processes on real Kafka/PostgreSQL/Redis
 * under a steady stream of job submissions. Each run stops one replica
 * (SIGKILL or SIGTERM) and measures, from the signal, the time until another
 * replica has handled a command on one of the victim's partitions (first) and
 * on all of them (all) — from `processed_messages` (partition, handler,
 * processed_at) in PostgreSQL, not from logs. A replacement replica is
 * started after each run.
 *
 *   node bench/orchestrator/failover.ts [--runs 10] [--client platformatic] [--session-timeout-ms 3000]
 *     [--heartbeat-interval-ms 500] [--rate-per-s 40]
 *
 * Defaults are the shipped ones (platformatic, 3 s / 0.5 s); the kafkajs
 * baseline: `--client kafkajs --session-timeout-ms 10000 --heartbeat-interval-ms 1000`.
 * A run slower than 2 × the session timeout + 2 s keeps the replicas' warnings
 * (`outliers` in the JSON) to say why.
 *
 * Baseline in the same run: the configured Kafka session timeout (ratio = failover / session timeout).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { kafkaClientName } from '../../core/src/bus/create-bus.ts';
import { PANORAMA } from '../../core/test/orchestrator/support/harness.ts';
import { waitFor } from '../../test/support/index.ts';
import { benchWorld, summarize, writeResult } from './world.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    client: { type: 'string', default: 'platformatic' },
    'session-timeout-ms': { type: 'string', default: '3000' },
    'heartbeat-interval-ms': { type: 'string', default: '500' },
    'rate-per-s': { type: 'string', default: '40' },
  },
});
const runs = Number(values.runs);
const sessionTimeoutMs = Number(values['session-timeout-ms']);
const heartbeatIntervalMs = Number(values['heartbeat-interval-ms']);
const client = kafkaClientName(values.client);
const ratePerS = Number(values['rate-per-s']);

const world = await benchWorld({ sessionTimeoutMs, heartbeatIntervalMs, client, extraEnv: { LOG_LEVEL: 'warn' } });
const loadAtStart = loadavg();
const outliers: Array<{ signal: string; run: number; ms: number; victim: string; survivorsLog: string[] }> = [];
const { harness: h } = world;
let stop = false;
try {
  for (let i = 0; i < 3; i++) await world.startReplica();
  await world.spreadOver(world.replicas.map((r) => r.instance));
  await h.startWorker({ sleepMs: 5 });
  let submitted = 0;
  let submitErrors = 0;
  const load = (async () => {
    while (!stop) {
      // A failed submission (the harness closing after an error) must not end the process before the error shows.
      await h.client
        .submit({
          organization_id: `org-${submitted % 7}`,
          match_id: `m-${randomBytes(4).toString('hex')}`,
          inputs: [PANORAMA],
          stages: ['detect'],
        })
        .then(
          () => {
            submitted += 1;
          },
          () => {
            submitErrors += 1;
          },
        );
      await sleep(1000 / ratePerS);
    }
  })();
  await sleep(3_000);
  const results: Record<string, Array<{ firstMs: number; allMs: number; partitions: number[] }>> = {
    SIGKILL: [],
    SIGTERM: [],
  };
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    for (let run = 0; run < runs; run++) {
      const alive = world.replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
      const victim = alive[run % alive.length]!;
      const partitions = (await world.owners()).get(victim.instance) ?? [];
      const t0 = Date.now();
      victim.child.kill(signal);
      const firsts = await waitFor(
        async () => {
          const rows = await h.db.query<{ partition: number; first: Date }>(
            `SELECT commands_partition AS partition, min(processed_at) AS first FROM processed_messages
             WHERE commands_partition = ANY($1::int[]) AND handled_by <> $2 AND processed_at > to_timestamp($3 / 1000.0)
             GROUP BY commands_partition`,
            [partitions, victim.instance, t0],
          );
          return rows.rows.length === partitions.length ? rows.rows : null;
        },
        { timeoutMs: 120_000, intervalMs: 50, message: 'victim partitions handled elsewhere' },
      );
      const times = firsts.map((r) => new Date(r.first).getTime() - t0);
      const measured = { firstMs: Math.min(...times), allMs: Math.max(...times), partitions };
      results[signal]!.push(measured);
      if (measured.allMs > 2 * sessionTimeoutMs + 2_000) {
        outliers.push({
          signal,
          run: run + 1,
          ms: measured.allMs,
          victim: victim.instance,
          survivorsLog: world.replicas
            .filter((r) => r !== victim)
            .map((r) => r.stderrTail().split('\n').slice(-30).join('\n')),
        });
      }
      process.stderr.write(`${signal} run ${run + 1}: first ${measured.firstMs} ms, all ${measured.allMs} ms\n`);
      await victim.exited;
      world.replicas.splice(world.replicas.indexOf(victim), 1);
      await world.startReplica();
      await world.spreadOver(world.replicas.map((r) => r.instance));
      await sleep(1_000);
    }
  }
  stop = true;
  await load;
  const summary = Object.fromEntries(
    Object.entries(results).map(([signal, list]) => {
      const first = summarize(list.map((r) => r.firstMs));
      const all = summarize(list.map((r) => r.allMs));
      return [
        signal,
        {
          first_ms: first,
          all_partitions_ms: all,
          median_ratio_to_session_timeout: Math.round((first.p50 / sessionTimeoutMs) * 100) / 100,
          runs: list,
        },
      ];
    }),
  );
  await writeResult(`orchestrator-failover-${client}-session-${sessionTimeoutMs}ms`, {
    measured_at: new Date().toISOString(),
    command: `node bench/orchestrator/failover.ts --runs ${runs} --client ${client} --session-timeout-ms ${sessionTimeoutMs} --heartbeat-interval-ms ${heartbeatIntervalMs} --rate-per-s ${ratePerS}`,
    kafka_client: client,
    session_timeout_ms: sessionTimeoutMs,
    heartbeat_interval_ms: heartbeatIntervalMs,
    load_average_start: loadAtStart.map((l) => Math.round(l * 100) / 100),
    load_average_end: loadavg().map((l) => Math.round(l * 100) / 100),
    submitted_jobs: submitted,
    submit_errors: submitErrors,
    ...summary,
    outliers,
  });
} finally {
  stop = true;
  await world.close();
}

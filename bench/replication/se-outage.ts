/**
 * One SE down 10 minutes during real jobs (issue 19 target: 0 failed jobs).
 *
 *   node bench/replication/se-outage.ts [--jobs 4] [--outage-s 600] [--factor 2]
 *
 * `--factor 1` is the baseline without copies (REPLICATION_FACTOR=1): the
 * jobs whose inputs are on the frozen SE can only wait for it.
 *
 * Runs bench/replication/se-outage-scenario.ts on the shared services
 * (`source /work/services.env` or the ones of `pnpm polyvision services up`)
 * in a private schema, Redis prefix and Kafka topic prefix, with the
 * shipped replication settings except `REPLICATION_SCAN_INTERVAL_MS=5000`
 * (the default SE_LOST_AFTER of 5 minutes applies: the repairer re-copies the
 * victim's files during the outage). Writes bench/results/replication-se-outage.json
 * (`.factor1.json` for the baseline).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestRedis, createTestSchema, deleteKafkaPrefix, uniqueName } from '../../test/support/index.ts';
import { runSeOutage } from './se-outage-scenario.ts';

const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const jobs = arg('--jobs', 4);
const outageS = arg('--outage-s', 600);
const factor = arg('--factor', 2);
Object.assign(process.env, {
  REPLICATION_FACTOR: String(factor),
  DETECT_ANALYSIS_FPS: process.env.DETECT_ANALYSIS_FPS ?? '5',
  REPLICATION_SCAN_INTERVAL_MS: '5000',
});
const schema = await createTestSchema('bench_se_outage');
const redis = await createTestRedis('bench-se-outage');
const topicPrefix = uniqueName('bench-se-outage');
const loadBefore = os.loadavg();
try {
  const result = await runSeOutage({
    cluster: {
      workDir: path.join(os.tmpdir(), uniqueName('bench-se-outage')),
      basePort: 26_000 + Math.floor(Math.random() * 50) * 100,
      topicPrefix,
      databaseSchema: schema.schema,
      redisKeyPrefix: redis.prefix,
      storageCapacityLimitBytes: 1024 ** 3,
    },
    jobs,
    requiredCopies: factor,
    outageMs: outageS * 1000,
    jobsTimeoutMs: Math.max(outageS * 1000, 600_000) + 600_000,
    repairTimeoutMs: 300_000,
    log: (line) => process.stderr.write(`[${new Date().toISOString()}] ${line}\n`),
  });
  const report = {
    benchmark: 'replication-se-outage',
    command: `node bench/replication/se-outage.ts --jobs ${jobs} --outage-s ${outageS} --factor ${factor}`,
    measured_at: new Date().toISOString(),
    load_average_before: loadBefore.map((l) => Number(l.toFixed(2))),
    load_average_after: os.loadavg().map((l) => Number(l.toFixed(2))),
    cpus: os.cpus().length,
    settings: { replication_factor: factor, se_lost_after_ms: 300_000, scan_interval_ms: 5_000 },
    ...result,
  };
  const out = path.join(
    import.meta.dirname,
    '..',
    'results',
    factor === 2 ? 'replication-se-outage.json' : `replication-se-outage.factor${factor}.json`,
  );
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  await deleteKafkaPrefix(topicPrefix).catch(() => {});
  await redis.close();
  await schema.close();
}

/**
 * Benchmark 2 of issue 5: 8 concurrent uploaders fill 5 storage elements
 * to 100 % through 2 ingest replicas.
 *
 * Run: eval "$(pnpm -s polyvision services up)" && node bench/ingest/fill-507.ts
 *      [--se-mib 64] [--min-mib 2] [--max-mib 10] [--uploaders 8]
 *
 * Measures, per configuration:
 * - the share of placements that met a 507 from an SE (`ingest_placements_total`
 *   `after_507` + refused creations that tried an SE) and the 507s per upload;
 * - the share of uploads that failed overall, and how many of those failures
 *   were premature: at the moment of the final 507, some SE still had
 *   `available` ≥ the file's size (must be 0);
 * - bytes written twice (bytes re-sent after a relocation);
 * - how full the SEs ended (used / total).
 *
 * Side by side in the same run: the capacity monitor on (leader polls every
 * 1 s, reservations written through to the cache, lazy updates) versus off
 * (blind placement: every configured SE is a candidate and only the SEs'
 * reservations decide, i.e. placement by trial and 507).
 */

import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import {
  BENCH_METRICS_TOKEN,
  type BenchSe,
  benchSchema,
  MiB,
  metricSum,
  startBenchIngest,
  startBenchSe,
  tusUpload,
} from './support.ts';

const { values } = parseArgs({
  options: {
    'se-mib': { type: 'string', default: '64' },
    'min-mib': { type: 'string', default: '2' },
    'max-mib': { type: 'string', default: '10' },
    uploaders: { type: 'string', default: '8' },
  },
});
const SE_BYTES = Number(values['se-mib']) * MiB;
const MIN_BYTES = Number(values['min-mib']) * MiB;
const MAX_BYTES = Number(values['max-mib']) * MiB;
const UPLOADERS = Number(values.uploaders);
if (!process.env.REDIS_URL || !process.env.DATABASE_URL) {
  process.stderr.write('REDIS_URL and DATABASE_URL must be set: eval "$(pnpm -s polyvision services up)"\n');
  process.exit(2);
}

async function runConfiguration(name: string, monitorEnv: Record<string, string>) {
  const ses: BenchSe[] = await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      startBenchSe(`se-${i}`, `dc${(i % 3) + 1}`, { STORAGE_CAPACITY_LIMIT_BYTES: String(SE_BYTES) }),
    ),
  );
  const { schema, drop } = await benchSchema(name);
  const env = {
    DATABASE_SCHEMA: schema,
    REDIS_KEY_PREFIX: `bench:fill:${name}:${randomBytes(4).toString('hex')}:`,
    CAPACITY_MONITOR_LEADER_TTL: '3',
    CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '1',
    CAPACITY_MONITOR_BASE_INTERVAL: '1',
    CAPACITY_MONITOR_MAX_INTERVAL: '10',
    CAPACITY_MONITOR_HTTP_RETRIES: '0',
    INGEST_PLACEMENT_MAX_ATTEMPTS: '3',
    INGEST_RETRY_AFTER_SECONDS: '1',
    ...monitorEnv,
  };
  const replicas = [await startBenchIngest(ses, env), await startBenchIngest(ses, env)];
  // Let the leader fill the cache before the first upload (when the monitor is on).
  if (monitorEnv.CAPACITY_MONITOR_ENABLED !== 'off') {
    for (let i = 0; i < 100; i++) {
      const status = await replicas[0]?.ingest.monitor.status();
      if (status && status.writable_storage_elements === ses.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const results: Array<{ size: number; status: string; sentBytes: number; premature: boolean; attempts: number }> = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: UPLOADERS }, async (_, u) => {
      for (let n = 0; ; n++) {
        const size = MIN_BYTES + Math.floor(Math.random() * (MAX_BYTES - MIN_BYTES));
        const bytes = randomBytes(size);
        const replica = replicas[(u + n) % replicas.length] as (typeof replicas)[number];
        const result = await tusUpload(replica.ingest.url, replica.token, bytes, { match_id: `m-${u}-${n}` });
        let premature = false;
        let attempts = 0;
        if (result.status === 'refused') {
          const body = result.body as { attempts?: unknown[] } | null;
          attempts = body?.attempts?.length ?? 0;
          // Was there really no room? Ask the SEs themselves.
          const capacities = await Promise.all(ses.map((se) => se.capacity()));
          premature = capacities.some((c) => c.available >= size);
        }
        results.push({ size, status: result.status, sentBytes: result.sentBytes, premature, attempts });
        if (result.status === 'refused' && !premature) return; // the space is really gone for this uploader
        if (n > 10_000) return;
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  const metrics = await Promise.all(
    replicas.map(async (r) =>
      (await fetch(`${r.ingest.url}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } })).text(),
    ),
  );
  const count = (outcome: string) =>
    metrics.reduce((s, m) => s + metricSum(m, 'ingest_placements_total', { outcome }), 0);
  const refusals507 = metrics.reduce((s, m) => s + metricSum(m, 'ingest_storage_insufficient_total'), 0);
  const capacities = await Promise.all(ses.map((se) => se.capacity()));
  const completed = results.filter((r) => r.status === 'completed');
  const refused = results.filter((r) => r.status === 'refused');
  const placements = count('first_try') + count('after_507') + count('failed');
  const outcome = {
    configuration: name,
    uploads: results.length,
    completed: completed.length,
    failed_mid_upload: results.filter((r) => r.status === 'failed').length,
    refused_final_507: refused.length,
    refused_premature: refused.filter((r) => r.premature).length,
    placements_first_try: count('first_try'),
    placements_after_507: count('after_507'),
    placements_failed: count('failed'),
    share_met_507:
      placements === 0 ? 0 : (count('after_507') + refused.filter((r) => r.attempts > 0).length) / placements,
    se_507_answers: refusals507,
    se_507_per_completed_upload: completed.length === 0 ? 0 : refusals507 / completed.length,
    share_failed_overall: results.length === 0 ? 0 : refused.length / results.length,
    bytes_written_twice: results.reduce(
      (s, r) => s + Math.max(0, r.sentBytes - (r.status === 'completed' ? r.size : 0)),
      0,
    ),
    bytes_completed: completed.reduce((s, r) => s + r.size, 0),
    fill_percent: (100 * capacities.reduce((s, c) => s + c.used, 0)) / capacities.reduce((s, c) => s + c.total, 0),
    largest_free_at_end_mib: Math.max(...capacities.map((c) => c.available)) / MiB,
    reserved_left_bytes: capacities.reduce((s, c) => s + c.reserved, 0),
    elapsed_seconds: Math.round(elapsedS * 10) / 10,
  };
  for (const r of replicas) await r.ingest.close();
  await Promise.all(ses.map((se) => se.stop()));
  await drop();
  return outcome;
}

const on = await runConfiguration('monitor_on', {});
process.stderr.write(`${JSON.stringify(on)}\n`);
const off = await runConfiguration('monitor_off', { CAPACITY_MONITOR_ENABLED: 'off' });
process.stderr.write(`${JSON.stringify(off)}\n`);
const result = {
  benchmark: 'ingest-fill-507',
  measured_at: new Date().toISOString(),
  host: { cpus: cpus().length },
  parameters: {
    ses: 5,
    se_bytes: SE_BYTES,
    min_bytes: MIN_BYTES,
    max_bytes: MAX_BYTES,
    uploaders: UPLOADERS,
    replicas: 2,
  },
  configurations: [on, off],
};
mkdirSync(new URL('../results/', import.meta.url), { recursive: true });
writeFileSync(new URL('../results/ingest-fill-507.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
process.exit(0);

/**
 * One SE hung during a real job (issue 19): the local cluster on the real
 * stages, a synthetic panorama uploaded and confirmed with 2 verified copies,
 * then the SE holding its primary copy is frozen (SIGSTOP) for the whole job.
 * The job completes (its inputs are read from the other copy, its outputs
 * placed on the live SEs), and once the SE is back every file of the run has
 * 2 verified copies. The 600 s variant is bench/replication/se-outage.ts.
 */
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSeOutage } from '../../bench/replication/se-outage-scenario.ts';
import {
  createTestRedis,
  createTestSchema,
  deleteKafkaPrefix,
  type TestRedis,
  type TestSchema,
  uniqueName,
} from '../../test/support/index.ts';

/** What the cluster's processes inherit (cluster lifecycle passes this process's environment on). */
const ENV: Record<string, string> = {
  DETECT_ANALYSIS_FPS: '5',
  // A read from the hung SE gives up after 3 s and falls back to the other copy.
  WORKER_SE_TIMEOUT_MS: '3000',
  INGEST_SE_TIMEOUT_MS: '3000',
  REPLICATION_SCAN_INTERVAL_MS: '1000',
  REPLICATION_SE_LOST_AFTER_MS: '5000',
  REPLICATION_LEADER_LEASE_MS: '5000',
};

describe('one storage element down during a real job', () => {
  let schema: TestSchema;
  let redis: TestRedis;
  const saved: Record<string, string | undefined> = {};
  const topicPrefix = uniqueName('se-outage');

  beforeAll(async () => {
    schema = await createTestSchema('se_outage');
    redis = await createTestRedis('se-outage');
    for (const [name, value] of Object.entries(ENV)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  });

  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await deleteKafkaPrefix(topicPrefix);
    await redis?.close();
    await schema?.close();
  });

  it('the job completes with the SE frozen, and every file has 2 verified copies once it is back', async () => {
    const result = await runSeOutage({
      cluster: {
        workDir: path.join(os.tmpdir(), uniqueName('se-outage')),
        basePort: 24_000 + Math.floor(Math.random() * 80) * 100,
        topicPrefix,
        databaseSchema: schema.schema,
        redisKeyPrefix: redis.prefix,
        storageCapacityLimitBytes: 256 * 1024 ** 2,
      },
      jobs: 1,
      outageMs: 0,
      jobsTimeoutMs: 300_000,
      repairTimeoutMs: 60_000,
      log: (line) => process.stderr.write(`[se-outage] ${line}\n`),
    });
    process.stderr.write(`[se-outage] ${JSON.stringify(result)}\n`);
    expect(result.not_completed, JSON.stringify(result)).toEqual([]);
    // The stages that read the panorama after the SIGSTOP read it from the other copy.
    expect(result.fallback_reads).toBeGreaterThan(0);
    expect(result.jobs_completed).toBe(1);
    expect(result.files).toBeGreaterThan(5);
    expect(result.files_with_2_verified_copies).toBe(result.files);
  }, 480_000);
});

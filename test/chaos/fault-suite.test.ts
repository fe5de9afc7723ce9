/**
 * Fault suite (issue 19, "Faults"): one real job per row on one shared
 * cluster of real processes — 3 storage elements in 3 datacenters, 3
 * orchestrators, 2 ingest replicas, 2 workers running the REAL stages
 * (detect, track, vcam, analyze, encode) on a small synthetic match —
 * against private Redis, PostgreSQL and Kafka (test/chaos/services.ts), while
 * one process or service is killed, stopped or restarted. Every row: the job
 * completes (0 failed, 0 unfinished), every catalogued file of the match
 * reads back from its SE with the catalog's SHA-256, no stage completes
 * twice, and a stage that ran again is recorded as a new attempt with its
 * own claim (the killed or stopped worker's claim `lost`).
 *
 * Liveness knobs are shortened so a row takes seconds, not minutes: claim
 * lease 6 s (a worker silent for 6 s loses its task), Kafka sessions 6 s,
 * reconciler every 2 s with a 6 s lease. `CHAOS_KEEP_DIR=1` keeps the
 * cluster's logs (path printed at the end).
 */
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../support/index.ts';
import { type Census, censusPool, takeCensus } from './census.ts';
import { ChaosCluster, FAST_LIVENESS_ENV, freeBasePort } from './cluster.ts';
import { renderSyntheticPanorama, type SyntheticPanorama, submitMatch } from './match.ts';
import { created, finished, inputStorage, partitionOwner, runningStage } from './probes.ts';
import { ChaosServices } from './services.ts';

interface RowContext {
  cluster: ChaosCluster;
  services: ChaosServices;
  db: pg.Pool;
  submit(via?: { create?: string; patch?: string }): Promise<string>;
}

interface FaultRow {
  name: string;
  /** The fault makes a stage run again: it must show as a new attempt after a lost claim. */
  rerun?: boolean;
  /** Injects the fault during job `jobId`; returns more jobs it submitted and how to undo the fault. */
  inject(ctx: RowContext, jobId: string): Promise<{ jobs?: string[]; restore?: () => Promise<void> }>;
}

const ROWS: FaultRow[] = [
  { name: 'no fault (baseline)', inject: async () => ({}) },
  {
    name: 'kill -9 the orchestrator that owns the job, mid-stage',
    async inject({ cluster, db }, jobId) {
      await runningStage(db, jobId);
      const owner = (await partitionOwner(db, jobId)) ?? 'orchestrator-1';
      await cluster.kill(owner);
      return { restore: async () => void (await cluster.restart(owner)) };
    },
  },
  {
    name: 'kill -9 the worker mid-stage, restarted at once with the same WORKER_ID',
    rerun: true,
    async inject({ cluster, db }, jobId) {
      const stage = await runningStage(db, jobId, { stage: 'detect' });
      await cluster.kill(stage.worker_id);
      await cluster.restart(stage.worker_id);
      return {};
    },
  },
  {
    name: 'kill -9 an ingest replica; the other takes the next upload',
    async inject({ cluster, db, submit }, jobId) {
      await created(db, jobId);
      await cluster.kill('ingest-1');
      const next = await submit({ create: 'ingest-2', patch: 'ingest-2' });
      return { jobs: [next], restore: async () => void (await cluster.restart('ingest-1')) };
    },
  },
  {
    name: 'SIGSTOP the SE holding the input for 8 s',
    async inject({ cluster, db }, jobId) {
      await created(db, jobId);
      const se = await inputStorage(db, jobId);
      cluster.pause(se);
      await sleep(8_000); // the length of the fault, not a wait for an event
      cluster.resume(se);
      return {};
    },
  },
  {
    name: 'Redis restart (every key lost), mid-stage',
    async inject({ services, db }, jobId) {
      await runningStage(db, jobId);
      await services.restart('redis');
      return {};
    },
  },
  {
    name: 'PostgreSQL restart, mid-stage',
    async inject({ services, db }, jobId) {
      await runningStage(db, jobId);
      await services.restart('postgres');
      return {};
    },
  },
  {
    name: 'Kafka broker restart, mid-stage',
    async inject({ services, db }, jobId) {
      await runningStage(db, jobId);
      await services.restart('kafka');
      return {};
    },
  },
  {
    name: 'SIGSTOP the worker mid-stage until its task is re-dispatched (heartbeats lost)',
    rerun: true,
    async inject({ cluster, db }, jobId) {
      const stage = await runningStage(db, jobId, { stage: 'detect' });
      cluster.pause(stage.worker_id);
      try {
        await runningStage(db, jobId, { stage: 'detect', attemptAbove: stage.attempt });
      } finally {
        cluster.resume(stage.worker_id);
      }
      return {};
    },
  },
  {
    name: 'kill -9 the SE holding the input, restarted after 5 s',
    async inject({ cluster, db }, jobId) {
      await created(db, jobId);
      const se = await inputStorage(db, jobId);
      await cluster.kill(se);
      await sleep(5_000); // the length of the outage
      await cluster.restart(se);
      return {};
    },
  },
  {
    name: 'kill -9 all 3 orchestrators mid-stage, then restart them',
    async inject({ cluster, db }, jobId) {
      await runningStage(db, jobId);
      const names = cluster.names('orchestrator');
      for (const name of names) await cluster.kill(name);
      await Promise.all(names.map((name) => cluster.restart(name)));
      return {};
    },
  },
];

describe('fault suite: real processes, real stages, one fault per row', () => {
  const services = new ChaosServices();
  const workDir = path.join(tmpdir(), uniqueName('chaos-faults'));
  let cluster: ChaosCluster;
  let db: pg.Pool;
  let panorama: SyntheticPanorama;
  const report: Array<{ row: string; census: Census; wallMs: number }> = [];

  beforeAll(async () => {
    const env = await services.up();
    cluster = await ChaosCluster.start({
      services: env,
      workDir,
      basePort: await freeBasePort(),
      topicPrefix: uniqueName('chaos'),
      databaseSchema: uniqueName('chaos').replaceAll('-', '_').toLowerCase(),
      env: FAST_LIVENESS_ENV,
    });
    db = censusPool(cluster);
    panorama = await renderSyntheticPanorama(path.join(workDir, 'synthetic'), { durationS: 4 });
  }, 600_000);

  afterAll(async () => {
    for (const { row, census, wallMs } of report) {
      process.stderr.write(
        `[chaos] ${row}: ${census.completed}/${census.jobs} completed, ${census.failed} failed, ` +
          `${census.filesMissing.length + census.filesCorrupt.length}/${census.filesChecked} files lost or corrupt, ` +
          `${census.stagesCompletedTwice.length} twice, re-runs ${JSON.stringify(census.reruns.map((r) => `${r.stage}@${r.attempt} [${r.claims.join(' ')}]`))}, ${wallMs} ms\n`,
      );
    }
    await db?.end();
    await cluster?.close();
    if (process.env.CHAOS_KEEP_DIR !== '1') await rm(workDir, { recursive: true, force: true });
    await services.down();
  }, 300_000);

  for (const row of ROWS) {
    it(row.name, async () => {
      const started = Date.now();
      const submit = (via?: { create?: string; patch?: string }) =>
        submitMatch(cluster, panorama, uniqueName('match'), via);
      const jobId = await submit();
      const { jobs = [], restore } = await row.inject({ cluster, services, db, submit }, jobId);
      const ids = [jobId, ...jobs];
      try {
        for (const id of ids) await finished(db, id);
      } finally {
        await restore?.();
      }
      const census = await takeCensus(cluster, db, ids);
      report.push({ row: row.name, census, wallMs: Date.now() - started });
      expect(census.failures).toEqual([]);
      expect({ completed: census.completed, unfinished: census.unfinished }).toEqual({
        completed: ids.length,
        unfinished: 0,
      });
      expect(census.filesChecked).toBeGreaterThan(ids.length);
      expect(census.filesMissing).toEqual([]);
      expect(census.filesCorrupt).toEqual([]);
      expect(census.stagesCompletedTwice).toEqual([]);
      expect(census.rerunsNotRecorded).toEqual([]);
      if (row.rerun) {
        const detect = census.reruns.find((r) => r.stage === 'detect');
        expect(detect?.attempt, JSON.stringify(census.reruns)).toBeGreaterThanOrEqual(2);
        expect(
          detect?.claims.some((c) => c.startsWith('1:lost:')),
          JSON.stringify(detect),
        ).toBe(true);
        expect(
          detect?.claims.some((c) => /^[2-9]\d*:completed:/.test(c)),
          JSON.stringify(detect),
        ).toBe(true);
      }
    });
  }
});

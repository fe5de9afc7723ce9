import { matchJobId, type Stage, stageTaskSchema } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import type { MessageBus } from '../../src/bus/message-bus.ts';
import { JobCommandClient } from '../../src/orchestrator/job-command-client.ts';
import { Reconciler } from '../../src/orchestrator/reconcile/reconciler.ts';
import { getJob } from '../../src/orchestrator/state/job-queries.ts';
import { ensureSegmentRunsTable, type SegmentStageOptions, segmentStage } from '../../src/testing/segment-stage.ts';
import { PgStageClaimStore } from '../../src/workers/runtime/stage-claims.ts';
import { WorkerRuntime } from '../../src/workers/runtime/worker-runtime.ts';
import { testDatabaseDrivers } from './support/databases.ts';
import { ALL_STAGES, Harness, PANORAMA } from './support/harness.ts';

const pg = testDatabaseDrivers.find((d) => d.name === 'pg')!;
const kafkaBrokers = process.env.KAFKA_BROKERS;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function world(busKind: 'memory' | 'kafka' = 'memory') {
  const bus: MessageBus =
    busKind === 'memory'
      ? new MemoryBus({ defaultPartitions: 4 })
      : new KafkaBus({ brokers: kafkaBrokers!.split(','), clientId: 'match-job-test' });
  const { db, drop } = await pg.open();
  const h = new Harness(bus, db);
  cleanups.push(drop, () => h.close());
  await h.setup();
  await ensureSegmentRunsTable(db);
  return h;
}

async function startWorker(h: Harness, stages: Stage[] = ALL_STAGES, options: Partial<SegmentStageOptions> = {}) {
  const worker = new WorkerRuntime({
    bus: h.bus,
    claims: new PgStageClaimStore(h.db),
    handlers: stages.map((stage) => segmentStage(stage, { db: h.db, sleepMs: 20, ...options })),
    topicPrefix: h.prefix,
    sessionTimeoutMs: 6_000,
    progressIntervalMs: 1_000,
    concurrency: 4,
  });
  h.workers.push(worker);
  await worker.start();
  return worker;
}

function reconcilerOf(h: Harness, matchIdleGraceMs?: number): Reconciler {
  const producer = h.bus.createProducer();
  cleanups.push(() => producer.close());
  return new Reconciler({
    db: h.db,
    client: new JobCommandClient(producer, h.prefix),
    ...(matchIdleGraceMs === undefined ? {} : { matchIdleGraceMs }),
  });
}

const ORG = 'acme';
const BASE_SLOT = 178_000_000;
const segment = (h: Harness, match: string, index: number, stages: Stage[] = ALL_STAGES) =>
  h.client.segment({
    organization_id: ORG,
    match_id: match,
    slot: BASE_SLOT + index,
    duration_s: 10,
    input: { ...PANORAMA, object_key: `${ORG}/${match}/seg-${index}.mp4` },
    stages,
  });
const ref = (match: string) => ({ job_id: matchJobId(ORG, match), organization_id: ORG, match_id: match });

interface Run {
  stage: string;
  segment_index: number;
  attempt: number;
  final: boolean;
  carry_key: string | null;
  carry_from: number | null;
  gap_s: number | null;
  started_at: Date;
  finished_at: Date | null;
}
async function runs(h: Harness, jobId: string): Promise<Run[]> {
  const r = await h.db.query<Run>(
    `SELECT stage, segment_index, attempt, final, carry_key, carry_from, gap_s, started_at, finished_at FROM test_segment_runs
     WHERE job_id = $1 ORDER BY id`,
    [jobId],
  );
  return r.rows;
}
async function status(h: Harness, jobId: string) {
  const r = await h.db.query<{ status: string }>(`SELECT status FROM jobs WHERE job_id = $1`, [jobId]);
  return r.rows[0]?.status ?? null;
}
async function stageStatus(h: Harness, jobId: string, stage: string, index: number) {
  const r = await h.db.query<{ status: string; attempt: number; task_message_id: string; model_version: string }>(
    `SELECT status, attempt, task_message_id::text AS task_message_id, model_version FROM job_stages
     WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
    [jobId, stage, index],
  );
  return r.rows[0] ?? null;
}

const worlds = [
  { bus: 'memory' as const, skip: pg.skip },
  { bus: 'kafka' as const, skip: pg.skip || !kafkaBrokers },
];

for (const { bus, skip } of worlds) {
  describe.skipIf(skip)(`a match as one job (${bus} bus, pg)`, { timeout: 180_000 }, () => {
    it('opens on its first segment, fans detect out, runs the sequential stages in order across a gap, completes after the end marker', async () => {
      const h = await world(bus);
      await h.startOrchestrator();
      await startWorker(h);
      const match = 'final-whistle';
      const jobId = await segment(h, match, 0);
      expect(jobId).toBe(matchJobId(ORG, match));
      await segment(h, match, 2); // out of order: 1 is late
      // detect runs on segment 2 at once; track stops at the gap.
      await waitFor(async () => (await stageStatus(h, jobId, 'detect', 2))?.status === 'completed');
      await waitFor(async () => (await stageStatus(h, jobId, 'track', 0))?.status === 'completed');
      const live = (await getJob(h.db, jobId))!;
      expect(live.kind).toBe('match');
      expect(live.match).toMatchObject({ live: true, segments_received: 2, gaps: [1] });
      expect((await stageStatus(h, jobId, 'track', 2))!.status).toBe('pending');
      // encode of the newest segment waits until a later one or the end is known (EVENT → VOD).
      expect((await stageStatus(h, jobId, 'encode', 2))!.status).toBe('pending');
      await segment(h, match, 1);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 3); // the end marker names slot 3: one more to come
      await waitFor(async () => (await stageStatus(h, jobId, 'encode', 2))?.status === 'completed');
      expect(await status(h, jobId)).toBe('running');
      await segment(h, match, 3);
      await h.waitForStatus([jobId], 'completed');
      const all = await runs(h, jobId);
      // Each stage ran once on each segment.
      expect(all.length).toBe(ALL_STAGES.length * 4);
      for (const stage of ALL_STAGES) {
        const mine = all.filter((r) => r.stage === stage);
        expect(mine.map((r) => r.segment_index).sort()).toEqual([0, 1, 2, 3]);
      }
      // Sequential stages: in segment order, each reading its previous segment's carry.
      for (const stage of ['track', 'vcam', 'analyze', 'encode']) {
        const mine = all.filter((r) => r.stage === stage);
        expect(mine.map((r) => r.segment_index)).toEqual([0, 1, 2, 3]);
        expect(mine.map((r) => r.carry_key)).toEqual([
          null,
          `${ORG}/${match}/${stage}/carry-0`,
          `${ORG}/${match}/${stage}/carry-1`,
          `${ORG}/${match}/${stage}/carry-2`,
        ]);
        for (let k = 1; k < 4; k++) {
          expect(mine[k]!.started_at.getTime()).toBeGreaterThanOrEqual(mine[k - 1]!.finished_at!.getTime());
        }
      }
      // Only the last segment's tasks dispatched after the end say final.
      expect(all.filter((r) => r.final).every((r) => r.segment_index === 3)).toBe(true);
      expect(all.find((r) => r.stage === 'encode' && r.segment_index === 3)!.final).toBe(true);
      const done = (await getJob(h.db, jobId))!;
      expect(done.match).toMatchObject({
        live: false,
        ended_by: 'marker',
        final_index: 3,
        segments_received: 4,
        gaps: [],
        lag_segments: 0,
        processed: { detect: 4, track: 4, vcam: 4, analyze: 4, encode: 4 },
      });
      expect(done.progress).toBe(1);
    });
  });
}

describe.skipIf(pg.skip)(
  'a match as one job: ranges, killed workers, idle grace (memory bus, pg)',
  {
    timeout: 180_000,
  },
  () => {
    it("opened by the edge's start marker: a first segment that arrives after a later one still gets index 0", async () => {
      const h = await world();
      await h.startOrchestrator();
      await startWorker(h);
      const match = 'kick-off';
      const jobId = await h.client.open({ organization_id: ORG, match_id: match, first_slot: BASE_SLOT });
      await waitFor(async () => (await status(h, jobId)) === 'running');
      await segment(h, match, 1); // the first one was set aside by the edge's uploader
      await h.client.open({ organization_id: ORG, match_id: match, first_slot: BASE_SLOT }); // again: a no-op
      await segment(h, match, 0);
      await segment(h, match, 2);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 2);
      await h.waitForStatus([jobId], 'completed');
      const all = await runs(h, jobId);
      for (const stage of ['track', 'vcam', 'analyze', 'encode']) {
        expect(all.filter((r) => r.stage === stage).map((r) => r.segment_index)).toEqual([0, 1, 2]);
      }
      expect((await getJob(h.db, jobId))!.match).toMatchObject({ segments_received: 3, gaps: [], final_index: 2 });
      // Without the marker, the later segment would have opened the match and the first been refused.
      const other = 'no-marker';
      const otherId = await segment(h, other, 1);
      await segment(h, other, 0);
      await h.client.end(ref(other), 'marker', BASE_SLOT + 1);
      await h.waitForStatus([otherId], 'completed');
      expect((await getJob(h.db, otherId))!.match).toMatchObject({ segments_received: 1, final_index: 0 });
    });

    it('with a fan-out window, a backlog of detect runs in segment order, never more than the window at once', async () => {
      const h = await world();
      await h.startOrchestrator({ matchFanOutInFlight: 1 });
      const match = 'backlog';
      const jobId = await segment(h, match, 0);
      for (const k of [1, 2, 3, 4]) await segment(h, match, k);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 4);
      // No worker yet: one detect task is out, the other four wait in the database, not in the topic.
      await waitFor(async () => (await stageStatus(h, jobId, 'detect', 4)) !== null);
      expect((await stageStatus(h, jobId, 'detect', 0))!.status).toBe('dispatched');
      for (const k of [1, 2, 3, 4]) expect((await stageStatus(h, jobId, 'detect', k))!.status).toBe('pending');
      await startWorker(h);
      await h.waitForStatus([jobId], 'completed');
      const detects = (await runs(h, jobId)).filter((r) => r.stage === 'detect');
      expect(detects.map((r) => r.segment_index)).toEqual([0, 1, 2, 3, 4]);
      for (let k = 1; k < detects.length; k++) {
        expect(detects[k]!.started_at.getTime()).toBeGreaterThanOrEqual(detects[k - 1]!.finished_at!.getTime());
      }
    });

    it('encodes the newest segment while the match goes on, and once more as final when the end comes after it', async () => {
      const h = await world();
      await h.startOrchestrator();
      await startWorker(h);
      const match = 'live-edge';
      const jobId = await segment(h, match, 0);
      await segment(h, match, 1);
      // Segment 1 is the newest: its analyze and encode run without waiting for segment 2 or the end.
      await waitFor(async () => (await stageStatus(h, jobId, 'encode', 1))?.status === 'completed');
      expect(await status(h, jobId)).toBe('running');
      await h.client.end(ref(match), 'marker', BASE_SLOT + 1);
      await h.waitForStatus([jobId], 'completed');
      const all = await runs(h, jobId);
      for (const stage of ['analyze', 'encode']) {
        // As not final while the match went on, then again as final: the ENDLIST, the final summary.
        expect(all.filter((r) => r.stage === stage && r.segment_index === 1).map((r) => r.final)).toEqual([
          false,
          true,
        ]);
        expect(all.filter((r) => r.stage === stage && r.segment_index === 0).map((r) => r.final)).toEqual([false]);
      }
    });

    it('reprocesses a range (sequential stages also after it) and cancels a range of a live match', async () => {
      const h = await world();
      await h.startOrchestrator();
      await startWorker(h);
      const match = 'ranges';
      const jobId = await segment(h, match, 0);
      for (const k of [1, 2, 3]) await segment(h, match, k);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 3);
      await h.waitForStatus([jobId], 'completed');
      const before = (await runs(h, jobId)).length;
      await h.client.reprocess(ref(match), 'track', { track: 'v2' }, 'new tracker', { from_index: 1, to_index: 1 });
      await waitFor(async () => (await runs(h, jobId)).length > before);
      await h.waitForStatus([jobId], 'completed');
      const again = (await runs(h, jobId)).slice(before);
      // detect of segment 1 is kept; track and everything downstream re-run on 1 and (carry) on 2 and 3.
      expect(again.filter((r) => r.stage === 'detect')).toEqual([]);
      for (const stage of ['track', 'vcam', 'analyze', 'encode']) {
        expect(again.filter((r) => r.stage === stage).map((r) => r.segment_index)).toEqual([1, 2, 3]);
      }
      expect(again.find((r) => r.stage === 'track' && r.segment_index === 1)!.carry_key).toBe(
        `${ORG}/${match}/track/carry-0`,
      );
      expect((await stageStatus(h, jobId, 'track', 0))!.model_version).toBe('default');
      expect((await stageStatus(h, jobId, 'track', 2))!.model_version).toBe('v2');

      // A live match: cancel segment 1; the match goes on without it.
      const live = 'cancel-range';
      const liveId = await segment(h, live, 0, ['detect', 'track']);
      await h.client.cancel(ref(live), 'bad footage', { from_index: 1, to_index: 1 });
      await segment(h, live, 1, ['detect', 'track']); // arrives after its cancel: ignored
      await segment(h, live, 2, ['detect', 'track']);
      await h.client.end(ref(live), 'marker', BASE_SLOT + 2);
      await h.waitForStatus([liveId], 'completed');
      const liveRuns = await runs(h, liveId);
      expect(liveRuns.filter((r) => r.segment_index === 1)).toEqual([]);
      expect(liveRuns.find((r) => r.stage === 'track' && r.segment_index === 2)!.carry_key).toBe(
        `${ORG}/${live}/track/carry-0`,
      );
      expect((await getJob(h.db, liveId))!.match).toMatchObject({ segments_cancelled: [1], gaps: [] });

      // Whole-match cancel.
      const gone = 'cancel-all';
      const goneId = await segment(h, gone, 0, ['detect']);
      await h.client.cancel(ref(gone), 'abandoned');
      await h.waitForStatus([goneId], 'cancelled');
    });

    it('leaves a segment out when a stage fails on it for good, completes without it and says which; a range reprocess runs it again; one failure more than the budget fails the match', async () => {
      const h = await world();
      await h.startOrchestrator({ matchMaxFailedSegments: 1 });
      const failing = new Set<string>(['bad-segment:track:1']);
      let current = 'bad-segment';
      await startWorker(h, ALL_STAGES, { failPermanently: (stage, k) => failing.has(`${current}:${stage}:${k}`) });
      const match = 'bad-segment';
      const jobId = await segment(h, match, 0);
      for (const k of [1, 2]) await segment(h, match, k);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 2);
      await h.waitForStatus([jobId], 'completed');
      const view = (await getJob(h.db, jobId))!;
      expect(view.match).toMatchObject({ segments_failed: [1], segments_received: 2, gaps: [], lag_segments: 0 });
      expect(view.error).toMatchObject({ code: 'segments_failed', segments: [1] });
      expect((view.error as { message: string }).message).toMatch(/segment 1 \(track: test_permanent_failure\) failed/);
      const all = await runs(h, jobId);
      // Segment 1 stopped at its failed track; the sequential stages went on from segment 0.
      expect(all.filter((r) => r.segment_index === 1).map((r) => r.stage)).toEqual(['detect', 'track']);
      for (const stage of ['track', 'vcam', 'analyze', 'encode']) {
        const run = all.find((r) => r.stage === stage && r.segment_index === 2)!;
        expect(run.carry_key).toBe(`${ORG}/${match}/${stage}/carry-0`);
        // The task says where it continues from, and how much of the match was left out (segment 1: 10 s).
        expect([run.carry_from, run.gap_s]).toEqual([0, 10]);
      }
      expect(all.find((r) => r.stage === 'track' && r.segment_index === 0)).toMatchObject({
        carry_from: null,
        gap_s: 0,
      });
      expect(all.find((r) => r.stage === 'detect' && r.segment_index === 0)).toMatchObject({
        carry_from: null,
        gap_s: null,
      });
      expect((await stageStatus(h, jobId, 'vcam', 1))!.status).toBe('cancelled');

      // The cause is fixed: a range reprocess runs the failed segment (and, by carry, the later ones) again.
      failing.clear();
      await h.client.reprocess(ref(match), 'track', {}, 'tracker fixed', { from_index: 1, to_index: 1 });
      await waitFor(async () => {
        const again = (await getJob(h.db, jobId))!;
        return again.status === 'completed' && again.match?.segments_failed.length === 0 ? again : null;
      });
      expect((await getJob(h.db, jobId))!.error).toBeNull();
      expect((await stageStatus(h, jobId, 'encode', 1))!.status).toBe('completed');

      // The last segment fails after segment 1's analyze and encode ran as not final: they run again as
      // final (the playlist's ENDLIST, the final analytics).
      current = 'last-bad';
      failing.add('last-bad:track:2');
      const lastId = await segment(h, current, 0);
      for (const k of [1, 2]) await segment(h, current, k);
      await h.client.end(ref(current), 'marker', BASE_SLOT + 2);
      await h.waitForStatus([lastId], 'completed');
      expect((await getJob(h.db, lastId))!.match).toMatchObject({ segments_failed: [2] });
      const lastRuns = await runs(h, lastId);
      for (const stage of ['analyze', 'encode']) {
        const mine = lastRuns.filter((r) => r.stage === stage && r.segment_index === 1);
        expect(mine.at(-1)!.final).toBe(true);
        expect(mine.filter((r) => r.final)).toHaveLength(1);
      }
      expect(lastRuns.filter((r) => r.segment_index === 2).map((r) => r.stage)).toEqual(['detect', 'track']);

      // Two segments fail with a budget of one: the second fails the match, and says why.
      failing.clear();
      current = 'two-bad';
      failing.add('two-bad:detect:0').add('two-bad:detect:1');
      const worseId = await segment(h, current, 0);
      await segment(h, current, 1);
      await h.waitForStatus([worseId], 'failed');
      const worse = (await getJob(h.db, worseId))!;
      expect(worse.error).toMatchObject({ code: 'test_permanent_failure', stage: 'detect' });
      expect((worse.error as { message: string }).message).toMatch(/ORCHESTRATOR_MATCH_MAX_FAILED_SEGMENTS = 1/);
    });

    it('a worker killed mid-segment: its claim lapses, heartbeat_timeout, and the segment runs again as attempt 2', async () => {
      const h = await world();
      await h.startOrchestrator();
      await startWorker(h, ['detect']); // no track worker yet
      const match = 'killed';
      const jobId = await segment(h, match, 0, ['detect', 'track']);
      await segment(h, match, 1, ['detect', 'track']);
      const row = await waitFor(async () => {
        const r = await stageStatus(h, jobId, 'track', 0);
        return r?.status === 'dispatched' ? r : null;
      });
      // A worker claimed track of segment 0 and died: nobody renews its 300 ms lease.
      const task = stageTaskSchema.parse({
        type: 'stage.task',
        message_id: row.task_message_id,
        job_id: jobId,
        organization_id: ORG,
        match_id: match,
        created_at: new Date().toISOString(),
        stage: 'track',
        attempt: 1,
        model_version: row.model_version,
        inputs: [PANORAMA],
        params: {},
        segment: { index: 0, start_s: 0, duration_s: 10, final: false },
      });
      expect((await new PgStageClaimStore(h.db).claim(task, 'dead-worker', 300)).state).toBe('claimed');
      const reconciler = reconcilerOf(h);
      const report = await waitFor(
        async () => {
          const r = await reconciler.reconcile();
          return r.overdueStages > 0 ? r : null;
        },
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      expect(report.overdueByCode).toEqual({ heartbeat_timeout: 1 });
      await waitFor(async () => (await stageStatus(h, jobId, 'track', 0))?.attempt === 2);
      await startWorker(h, ['track']);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 1);
      await h.waitForStatus([jobId], 'completed');
      const tracks = (await runs(h, jobId)).filter((r) => r.stage === 'track');
      expect(tracks.map((r) => [r.segment_index, r.attempt])).toEqual([
        [0, 2],
        [1, 1],
      ]);
    });

    it('closes a match whose end never comes after the idle grace, giving its missing segments up, and says so', async () => {
      const h = await world();
      const events = await h.collect(`${h.prefix}.jobs.events`);
      await h.startOrchestrator();
      await startWorker(h);
      const match = 'no-whistle';
      const jobId = await segment(h, match, 0);
      await segment(h, match, 2);
      await waitFor(async () => (await stageStatus(h, jobId, 'track', 0))?.status === 'completed');
      const reconciler = reconcilerOf(h, 1_000);
      expect((await reconciler.reconcile()).idleMatchesClosed).toEqual([]); // newest segment younger than the grace
      const report = await waitFor(
        async () => {
          const r = await reconciler.reconcile();
          return r.idleMatchesClosed.length > 0 ? r : null;
        },
        { timeoutMs: 15_000, intervalMs: 250 },
      );
      expect(report.idleMatchesClosed).toEqual([jobId]);
      await h.waitForStatus([jobId], 'completed');
      const view = (await getJob(h.db, jobId))!;
      expect(view.match).toMatchObject({ ended_by: 'idle_grace', final_index: 2, segments_missing: [1], gaps: [] });
      const track2 = (await runs(h, jobId)).find((r) => r.stage === 'track' && r.segment_index === 2)!;
      expect(track2.carry_key).toBe(`${ORG}/${match}/track/carry-0`);
      expect((await runs(h, jobId)).find((r) => r.stage === 'encode' && r.segment_index === 2)!.final).toBe(true);
      await waitFor(() =>
        events.map((r) => JSON.parse(r.value)).some((e) => e.job_id === jobId && e.error?.code === 'match_idle_closed'),
      );
      expect((await reconciler.reconcile()).idleMatchesClosed).toEqual([]);
    });

    it('hands the person height its first detect runs measured (their median) to the later segments', async () => {
      const h = await world();
      await h.startOrchestrator();
      // Segments 0 and 1 measure 20 and 24 px (as detect's first pass reports it in its stats).
      await startWorker(h, ALL_STAGES, {
        stats: (stage, index): Record<string, number> =>
          stage === 'detect' && index < 2 ? { person_height_px: 20 + 4 * index } : {},
      });
      const match = 'one-plan';
      const jobId = await segment(h, match, 0);
      await segment(h, match, 1);
      for (const k of [0, 1])
        await waitFor(async () => (await stageStatus(h, jobId, 'detect', k))?.status === 'completed');
      await segment(h, match, 2);
      await h.client.end(ref(match), 'marker', BASE_SLOT + 2);
      await h.waitForStatus([jobId], 'completed');
      const params = async (index: number) =>
        (
          await h.db.query<{ params: Record<string, unknown> }>(
            `SELECT params FROM test_segment_runs WHERE job_id = $1 AND stage = 'detect' AND segment_index = $2`,
            [jobId, index],
          )
        ).rows[0]!.params;
      expect((await params(0)).person_height_px).toBeUndefined();
      expect((await params(2)).person_height_px).toBe(22);
      // Other stages are not given it.
      const track = await h.db.query<{ params: Record<string, unknown> }>(
        `SELECT params FROM test_segment_runs WHERE job_id = $1 AND stage = 'track' AND segment_index = 2`,
        [jobId],
      );
      expect(track.rows[0]!.params.person_height_px).toBeUndefined();
    });
  },
);

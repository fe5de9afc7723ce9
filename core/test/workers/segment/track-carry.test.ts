import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DetectionsFile } from '../../../src/workers/detect/index.ts';
import { LocalArtifactIo, TORSO_APPEARANCE } from '../../../src/workers/detect/index.ts';
import type { StageResult } from '../../../src/workers/runtime/stage-handler.ts';
import { createStageHandler } from '../../../src/workers/track/handler.ts';
import {
  type BallTrackFile,
  mergeSegmentBallTracks,
  mergeSegmentTracks,
  readBallTrackFile,
  readTracksFile,
  type TracksFile,
} from '../../../src/workers/track/index.ts';
import { detectionsHeader } from '../support/tracks.ts';
import { detectionsText, runStage, segmentOf, segmentTask, snapshotStore, storeFile } from './support.ts';

const FPS = 10;
const SEGMENT_S = 2;
const SEGMENTS = 3;
const PLAYERS = 6;
const W = 1280;
const H = 360;

/**
 * Six players crossing the frame at different speeds, frames numbered from 0 in each segment; the
 * order of the boxes rotates per segment, so a fresh tracker would number them differently.
 */
function segmentDetections(index: number): DetectionsFile {
  const perSegment = FPS * SEGMENT_S;
  return {
    header: detectionsHeader(SEGMENT_S * 25, 25, W, H, FPS),
    frames: Array.from({ length: perSegment }, (_, k) => {
      const matchFrame = index * perSegment + k;
      return {
        frame: k,
        tMs: (k * 1000) / FPS,
        detections: Array.from({ length: PLAYERS }, (_, q) => {
          const p = (q + index * 2) % PLAYERS;
          const x = 100 + p * 180 + matchFrame * (2 + p);
          const y = 80 + (p % 3) * 90;
          return {
            class: 'player' as const,
            score: 0.9,
            box: [x - 10, y - 25, x + 10, y + 25] as [number, number, number, number],
          };
        }),
      };
    }),
  };
}

/** Largest distance (px) between an id's last box in `before` and its first box in `after`. */
function maxBoundaryJumpPx(before: TracksFile, after: TracksFile): number {
  let worst = 0;
  for (const t of after.tracks) {
    const last = before.tracks.find((b) => b.id === t.id)?.frames.at(-1);
    if (!last) continue;
    const first = t.frames[0]!;
    worst = Math.max(worst, Math.hypot(first.box[0] - last.box[0], first.box[1] - last.box[1]));
  }
  return worst;
}

let root: string;
let io: LocalArtifactIo;
const handler = () =>
  createStageHandler(
    { env: { TRACK_HIGH_SCORE: '0.5', TRACK_LOW_SCORE: '0.1', WORKER_WORK_DIR: join(root, 'work') } } as never,
    { io },
  );
const detections: ArtifactRef[] = [];
const carries: ArtifactRef[] = [];
const tracks: TracksFile[] = [];
const ballTracks: BallTrackFile[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-segment-track-'));
  io = new LocalArtifactIo(join(root, 'store'));
  for (let i = 0; i < SEGMENTS; i++) {
    detections.push(
      await storeFile(
        join(root, 'store'),
        `org-1/match-1/detect/default/segment-00000${i}/detections.jsonl`,
        detectionsText(segmentDetections(i)),
        'detections',
      ),
    );
  }
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** The run's tracks: every player, none with an id of segment 0 (no id continues, none is reused). */
async function expectNewIds(result: StageResult): Promise<TracksFile> {
  const after = await readTracksFile(join(root, 'store', result.outputs.find((o) => o.kind === 'tracks')!.object_key));
  const before = tracks[0]!.tracks.filter((t) => t.class !== 'ball').map((t) => t.id);
  const people = after.tracks.filter((t) => t.class !== 'ball');
  expect(people).toHaveLength(PLAYERS);
  for (const t of people) expect(t.id).toBeGreaterThan(Math.max(...before));
  return after;
}

describe('track over a match segment by segment', () => {
  it('keeps every id across the boundaries with the carried tracker state', async () => {
    for (let i = 0; i < SEGMENTS; i++) {
      const inputs = i === 0 ? [detections[i]!] : [detections[i]!, carries[i - 1]!];
      const result = await runStage(handler(), segmentTask('track', inputs, segmentOf(i, SEGMENTS, SEGMENT_S)));
      const ref = result.outputs.find((o) => o.kind === 'tracks')!;
      expect(ref.object_key).toBe(`org-1/match-1/track/default/segment-00000${i}/tracks.json`);
      carries.push(result.outputs.find((o) => o.kind === 'track-carry')!);
      expect(carries[i]!.object_key).toBe(`org-1/match-1/track/default/segment-00000${i}/track-carry.json`);
      tracks.push(await readTracksFile(join(root, 'store', ref.object_key)));
      const ball = result.outputs.find((o) => o.kind === 'ball-track')!;
      ballTracks.push(await readBallTrackFile(join(root, 'store', ball.object_key)));
    }
    const ids = (t: TracksFile) => t.tracks.filter((x) => x.class !== 'ball').map((x) => x.id);
    expect(ids(tracks[0]!)).toHaveLength(PLAYERS);
    expect(ids(tracks[1]!)).toEqual(ids(tracks[0]!));
    expect(ids(tracks[2]!)).toEqual(ids(tracks[0]!));
    // The same id is the same player: its box continues across each boundary.
    for (let i = 1; i < SEGMENTS; i++) expect(maxBoundaryJumpPx(tracks[i - 1]!, tracks[i]!)).toBeLessThan(30);
    expect(tracks[1]!.segment).toEqual({ index: 1, startS: SEGMENT_S, firstMatchFrame: FPS * SEGMENT_S });

    const match = mergeSegmentTracks([tracks[2]!, tracks[0]!, tracks[1]!]);
    expect(match.frameCount).toBe(FPS * SEGMENT_S * SEGMENTS);
    for (const t of match.tracks) {
      expect(t.frames.map((f) => f.frame)).toEqual(Array.from({ length: match.frameCount }, (_, k) => k));
      expect(t.frames.at(-1)!.tMs).toBe(((match.frameCount - 1) * 1000) / FPS);
    }
    // The ball track names its segment as tracks.json does, and joins into one on the match clock.
    expect(ballTracks.map((b) => b.segment)).toEqual(tracks.map((t) => t.segment));
    const ball = mergeSegmentBallTracks([ballTracks[1]!, ballTracks[2]!, ballTracks[0]!]);
    expect(ball.frames.map((f) => f.frame)).toEqual(Array.from({ length: match.frameCount }, (_, k) => k));
    expect(ball.frames.at(-1)!.t).toBeCloseTo((match.frameCount - 1) / FPS, 6);
    expect(ball.summary.frames).toBe(match.frameCount);
    expect(ball.segment).toBeUndefined();
  });

  it('never decodes the panorama when detect measured the colours, even if no box was big enough for them', async () => {
    // A "panorama" that is not a video: decoding it would fail the stage with input_not_video.
    const panorama = await storeFile(
      join(root, 'store'),
      'org-1/match-1/edge/segment-000000/panorama.mp4',
      'not a video',
      'panorama',
    );
    const measured = { ...segmentDetections(0) };
    measured.header = { ...measured.header, appearance: TORSO_APPEARANCE };
    const withHeader = await storeFile(
      join(root, 'store'),
      'org-1/match-1/detect/v-appearance/segment-000000/detections.jsonl',
      detectionsText(measured),
      'detections',
    );
    const task = (input: ArtifactRef) => ({
      ...segmentTask('track', [input, panorama], segmentOf(0, 1, SEGMENT_S)),
      model_versions: { track: 'v-appearance' },
    });
    const result = await runStage(handler(), task(withHeader));
    expect(result.outputs.some((o) => o.kind === 'tracks')).toBe(true);
    // A file from a producer that measured nothing: the stage decodes the video for the colours.
    await expect(runStage(handler(), task(detections[0]!))).rejects.toMatchObject({ code: 'input_not_video' });
  });

  it('without the carry (a fresh tracker per segment) the same id jumps to another player', async () => {
    // Another model version, so that its keys do not replace the match's segment 0.
    const fresh = await runStage(handler(), {
      ...segmentTask('track', [detections[1]!], segmentOf(0, 1, SEGMENT_S)),
      model_version: 'fresh',
    });
    const alone = await readTracksFile(join(root, 'store', fresh.outputs.find((o) => o.kind === 'tracks')!.object_key));
    expect(maxBoundaryJumpPx(tracks[0]!, alone)).toBeGreaterThan(100);
  });

  it('fails with carry_missing (not retriable) when a later segment has no carry', async () => {
    const error = await runStage(
      handler(),
      segmentTask('track', [detections[1]!], segmentOf(1, SEGMENTS, SEGMENT_S)),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolyvisionError);
    expect((error as PolyvisionError).code).toBe('carry_missing');
    expect((error as PolyvisionError).retriable).toBe(false);
  });

  it('continues past a segment left out (carry_from, gap_s): no carry_invalid, new ids, the match frames run on', async () => {
    // Segment 1 failed: segment 2 reads segment 0's carry, 2 s of the match later.
    const result = await runStage(handler(), {
      ...segmentTask('track', [detections[2]!, carries[0]!], {
        ...segmentOf(2, SEGMENTS, SEGMENT_S),
        carry_from: 0,
        gap_s: SEGMENT_S,
      }),
      model_version: 'after-gap',
    });
    // Boxes from before the gap say nothing of where the players are now: no id continues, none is reused.
    const after = await expectNewIds(result);
    expect(after.segment).toEqual({ index: 2, startS: 2 * SEGMENT_S, firstMatchFrame: 2 * FPS * SEGMENT_S });
    // The same carry without the orchestrator's carry_from is refused, as before.
    const refused = await runStage(
      handler(),
      segmentTask('track', [detections[2]!, carries[0]!], segmentOf(2, SEGMENTS, SEGMENT_S)),
    ).catch((e: unknown) => e);
    expect((refused as PolyvisionError).code).toBe('carry_invalid');
  });

  it('ends the tracks (ids going on) when the previous segment was analysed at another rate', async () => {
    // Segment 1 analysed at 5 fps (another worker's setting) after segment 0 at 10: every other frame.
    const tenFps = segmentDetections(1);
    const fiveFps: DetectionsFile = {
      header: { ...tenFps.header, analysisFps: FPS / 2 },
      frames: tenFps.frames.filter((_, k) => k % 2 === 0).map((f, k) => ({ ...f, frame: k })),
    };
    const input = await storeFile(
      join(root, 'store'),
      'org-1/match-1/detect/five-fps/segment-000001/detections.jsonl',
      detectionsText(fiveFps),
      'detections',
    );
    const result = await runStage(handler(), {
      ...segmentTask('track', [input, carries[0]!], segmentOf(1, SEGMENTS, SEGMENT_S)),
      model_version: 'five-fps',
    });
    expect(result.stats?.carriedAnalysisFps).toBe(FPS);
    await expectNewIds(result);
  });

  it('starts fresh when no earlier segment went through (carry_from null), instead of carry_missing', async () => {
    const result = await runStage(handler(), {
      ...segmentTask('track', [detections[1]!], { ...segmentOf(1, SEGMENTS, SEGMENT_S), carry_from: null, gap_s: 0 }),
      model_version: 'first-failed',
    });
    const alone = await readTracksFile(
      join(root, 'store', result.outputs.find((o) => o.kind === 'tracks')!.object_key),
    );
    expect(alone.tracks.filter((t) => t.class !== 'ball').map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('fails with carry_invalid for the carry of another segment', async () => {
    const error = await runStage(
      handler(),
      segmentTask('track', [detections[2]!, carries[0]!], segmentOf(2, SEGMENTS, SEGMENT_S)),
    ).catch((e: unknown) => e);
    expect((error as PolyvisionError).code).toBe('carry_invalid');
    expect((error as PolyvisionError).retriable).toBe(false);
  });

  it('re-running a segment rewrites only its own keys, with the same content', async () => {
    const before = await snapshotStore(join(root, 'store'));
    const result = await runStage(
      handler(),
      segmentTask('track', [detections[1]!, carries[0]!], segmentOf(1, SEGMENTS, SEGMENT_S)),
    );
    const after = await snapshotStore(join(root, 'store'));
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    const own = 'org-1/match-1/track/default/segment-000001/';
    for (const [key, b] of before) {
      const a = after.get(key)!;
      expect(a.sha256, key).toBe(b.sha256);
      if (!key.startsWith(own)) expect(a.mtimeMs, key).toBe(b.mtimeMs);
    }
    expect(result.outputs.every((o) => o.object_key.startsWith(own))).toBe(true);
    const carry = JSON.parse(await readFile(join(root, 'store', `${own}track-carry.json`), 'utf8'));
    expect(carry.segment_index).toBe(1);
  });
});

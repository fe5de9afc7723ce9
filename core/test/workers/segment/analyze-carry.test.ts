import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStageHandler } from '../../../src/workers/analyze/handler.ts';
import {
  type AnalyzeCollected,
  accumulateMatchAnalytics,
  type MatchAnalyticsCarry,
  type MatchAnalyticsSummary,
  matchTeams,
  type PlayerSummary,
  writeMatchAnalytics,
} from '../../../src/workers/analyze/index.ts';
import { LocalArtifactIo, TORSO_MEAN_RGB } from '../../../src/workers/detect/index.ts';
import { makeClip } from '../support/media.ts';
import { movingTrack, tracksFile } from '../support/tracks.ts';
import { runStage, segmentOf, segmentTask, storeFile } from './support.ts';

const SEGMENTS = 3;
const SEGMENT_S = 2;
const FPS = 10;
const FRAMES = SEGMENT_S * FPS;

let root: string;
let store: string;
let io: LocalArtifactIo;
const videos: ArtifactRef[] = [];
const tracks: ArtifactRef[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-segment-analyze-'));
  store = join(root, 'store');
  io = new LocalArtifactIo(store);
  const clip = await makeClip(join(root, 'panorama.mp4'), 'testsrc2=size=320x180:rate=10', SEGMENT_S);
  for (let i = 0; i < SEGMENTS; i++) {
    const key = `org-1/match-1/segment-00000${i}/panorama.mp4`;
    videos.push(await storeFile(store, key, await readFile(clip), 'panorama'));
    // Two players in every segment (ids carried by the track stage), a third only in the last one.
    const list = [1, 2, ...(i === SEGMENTS - 1 ? [3] : [])].map((id) =>
      movingTrack(id, 'player', FRAMES, (f) => [40 + id * 60 + f, 90], [10, 30]),
    );
    const file = {
      ...tracksFile(list, FRAMES, FPS, 320, 180),
      segment: { index: i, startS: i * SEGMENT_S, firstMatchFrame: i * FRAMES },
    };
    tracks.push(
      await storeFile(
        store,
        `org-1/match-1/track/default/segment-00000${i}/tracks.json`,
        JSON.stringify(file),
        'tracks',
      ),
    );
  }
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('analyze accumulates over a match segment by segment', () => {
  it('writes the match analytics so far at every segment, final after the last', async () => {
    const handler = createStageHandler({ env: { WORKER_WORK_DIR: join(root, 'work') } } as never, { io });
    let carry: ArtifactRef | undefined;
    const summaries: MatchAnalyticsSummary[] = [];
    for (let i = 0; i < SEGMENTS; i++) {
      const inputs = [tracks[i]!, videos[i]!, ...(carry ? [carry] : [])];
      const result = await runStage(handler, segmentTask('analyze', inputs, segmentOf(i, SEGMENTS, SEGMENT_S)));
      carry = result.outputs.find((o) => o.kind === 'analyze-carry');
      expect(carry?.object_key).toBe(`org-1/match-1/analyze/default/segment-00000${i}/analyze-carry.json`);
      expect(result.outputs.find((o) => o.kind === 'analytics')?.object_key).toBe(
        `org-1/match-1/analyze/default/segment-00000${i}/summary.json`,
      );
      const match = result.outputs.find((o) => o.kind === 'match-analytics')!;
      expect(match.object_key).toBe('org-1/match-1/analyze/default/match/summary.json');
      summaries.push(JSON.parse(await readFile(join(store, match.object_key), 'utf8')));
      expect(result.outputs.some((o) => o.kind === 'match-heatmap')).toBe(true);
    }
    expect(summaries.map((s) => s.final)).toEqual([false, false, true]);
    expect(summaries.map((s) => s.segments)).toEqual([1, 2, 3]);
    const last = summaries.at(-1)!;
    expect(last.durationSeconds).toBeCloseTo(SEGMENTS * SEGMENT_S, 1);
    const frames = new Map(last.players.map((p) => [p.trackId, p.frames]));
    expect(frames.get(1)).toBe(SEGMENTS * FRAMES);
    expect(frames.get(2)).toBe(SEGMENTS * FRAMES);
    expect(frames.get(3)).toBe(FRAMES);
    expect(last.heatmaps.all).toBe('heatmaps/all.png');
  });

  it('after a segment left out, counts the segments it accumulated, not the index', async () => {
    const handler = createStageHandler({ env: { WORKER_WORK_DIR: join(root, 'work') } } as never, { io });
    const version = (task: ReturnType<typeof segmentTask>) => ({ ...task, model_version: 'gap' });
    const first = await runStage(
      handler,
      version(segmentTask('analyze', [tracks[0]!, videos[0]!], segmentOf(0, SEGMENTS, SEGMENT_S))),
    );
    const carry = first.outputs.find((o) => o.kind === 'analyze-carry')!;
    // Segment 1 was left out: segment 2 (the third clip) continues from segment 0.
    const third = await runStage(
      handler,
      version(
        segmentTask('analyze', [tracks[2]!, videos[2]!, carry], {
          ...segmentOf(2, SEGMENTS, SEGMENT_S),
          carry_from: 0,
          gap_s: SEGMENT_S,
        }),
      ),
    );
    const match = third.outputs.find((o) => o.kind === 'match-analytics')!;
    const summary = JSON.parse(await readFile(join(store, match.object_key), 'utf8')) as MatchAnalyticsSummary;
    expect(summary).toMatchObject({ segments: 2, final: true });
    expect(summary.durationSeconds).toBeCloseTo(2 * SEGMENT_S, 1);
  });

  it('never fetches the panorama when the tracks carry the colours detect measured', async () => {
    const handler = createStageHandler({ env: { WORKER_WORK_DIR: join(root, 'work') } } as never, { io });
    // A "panorama" that is not a video: decoding it would fail the stage.
    const notVideo = await storeFile(store, 'org-1/match-2/segment-000000/panorama.mp4', 'not a video', 'panorama');
    const file = (torsoColour: boolean) => {
      const list = [1, 2].map((id) => {
        const t = movingTrack(id, 'player', FRAMES, (f) => [40 + id * 60 + f, 90], [10, 30]);
        for (const f of t.frames) f.torso = id === 1 ? [200, 30, 30] : [30, 30, 200];
        return t;
      });
      const tracksFileOf = tracksFile(list, FRAMES, FPS, 320, 180);
      if (torsoColour) tracksFileOf.detections = { ...tracksFileOf.detections, torsoColour: TORSO_MEAN_RGB };
      return { ...tracksFileOf, segment: { index: 0, startS: 0, firstMatchFrame: 0 } };
    };
    const task = async (version: string, torsoColour: boolean) => ({
      ...segmentTask(
        'analyze',
        [
          await storeFile(
            store,
            `org-1/match-2/track/${version}/segment-000000/tracks.json`,
            JSON.stringify(file(torsoColour)),
            'tracks',
          ),
          notVideo,
        ],
        segmentOf(0, 1, SEGMENT_S),
      ),
      match_id: 'match-2',
      model_version: version,
    });
    const result = await runStage(handler, await task('stored', true));
    const match = result.outputs.find((o) => o.kind === 'match-analytics')!;
    const summary = JSON.parse(await readFile(join(store, match.object_key), 'utf8')) as MatchAnalyticsSummary;
    const [a, b] = [summary.teams.A, summary.teams.B];
    expect([a.colour, b.colour].sort()).toEqual([
      [200, 30, 30],
      [30, 30, 200],
    ]);
    expect([...a.players, ...b.players].sort()).toEqual([1, 2]);
    // Tracks from an older detections file: the colours come from the video, which is read (and fails here).
    await expect(runStage(handler, await task('older', false))).rejects.toMatchObject({ code: 'input_not_video' });
  });
});

describe('match teams', () => {
  const carry = (analysedFrames: number | undefined): MatchAnalyticsCarry => ({
    unit: 'px',
    venueId: null,
    bounds: [0, 0, 320, 180],
    durationSeconds: 6,
    segments: 3,
    ...(analysedFrames === undefined ? {} : { analysedFrames }),
    players: [],
    samples: [],
    teamColours: { A: [200, 30, 30], B: [30, 30, 200] },
    grid: { columns: 1, rows: 1, cellSize: 1, all: [0], A: [0], B: [0] },
  });
  const player = (trackId: number, team: 'A' | 'B', frames: number): PlayerSummary => ({
    trackId,
    class: 'player',
    team,
    role: 'outfield',
    onPitch: null,
    frames,
    durationSeconds: frames / 10,
    distance: null,
    maxSpeed: null,
    meanSpeed: null,
    sprints: null,
    sprintDistance: null,
  });

  it('sizes the teams by players per frame, not by track ids (one player may have several tracks)', () => {
    // Team A: two players, one of them split into two tracks (3 ids); team B: two players, 2 ids.
    const players = [
      player(1, 'A', 60),
      player(2, 'A', 30),
      player(3, 'A', 30),
      player(4, 'B', 60),
      player(5, 'B', 60),
    ];
    const teams = matchTeams(carry(60), players);
    expect(teams.A).toMatchObject({ players: [1, 2, 3], playersPerFrame: 2 });
    expect(teams.B).toMatchObject({ players: [4, 5], playersPerFrame: 2 });
    expect(teams.balanced).toBe(true);
    // Seven players against two is not balanced, whatever the ids.
    const lopsided = [...players, ...[6, 7, 8, 9, 10].map((id) => player(id, 'A', 60)), player(11, 'B', 0)];
    expect(matchTeams(carry(60), lopsided)).toMatchObject({ A: { playersPerFrame: 7 }, balanced: false });
    // A carry written before frames were counted: no sizes, no verdict.
    const old = matchTeams(carry(undefined), players);
    expect(old.A.playersPerFrame).toBeUndefined();
    expect(old.balanced).toBeUndefined();
  });

  it("names a shirt of neither team by where it stood over the match's segments", async () => {
    // Pitch metres, 105 × 68: one segment in the left penalty area, then a shorter one outside it.
    const space = {
      kind: 'pitch' as const,
      unit: 'm' as const,
      bounds: [-52.5, -34, 52.5, 34] as [number, number, number, number],
      fromImage: (u: number, v: number): [number, number] => [u, v],
    };
    const segment = (frames: number, x: number) => {
      const positions = Array.from({ length: frames }, (_, f) => ({ frame: f, x, y: 0 }));
      const summary = {
        unit: 'm',
        venueId: 'v',
        bounds: space.bounds,
        durationSeconds: frames / 10,
        players: [{ ...player(7, 'A', frames), team: 'other', class: 'player', onPitch: true }],
      } as unknown as AnalyzeCollected['summary'];
      return {
        samples: new Map(),
        positions: new Map([[7, positions]]),
        onPitch: new Map([[7, true]]),
        space,
        fps: 10,
        cellSize: 1,
        summary,
      } satisfies AnalyzeCollected;
    };
    const first = accumulateMatchAnalytics(null, segment(30, -45));
    expect(first.carry.players[0]?.zones).toEqual({ frames: 30, penaltyArea: 30, touchline: 0 });
    const second = accumulateMatchAnalytics(first.carry, segment(10, 0));
    expect(second.carry.players[0]?.zones).toEqual({ frames: 40, penaltyArea: 30, touchline: 0 });
    const dir = await mkdtemp(join(tmpdir(), 'pv-roles-'));
    try {
      const summary = await writeMatchAnalytics(dir, second.carry, second.teams, space, { segments: 2, final: true });
      // 30 of 40 positions in the penalty area: ≥ 60 %, a goalkeeper (a segment alone in midfield would not say so).
      expect(summary.players[0]?.role).toBe('goalkeeper');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

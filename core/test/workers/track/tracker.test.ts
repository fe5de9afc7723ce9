import { describe, expect, it } from 'vitest';
import type { BoxXyxy, DetectionsFile } from '../../../src/workers/detect/index.ts';
import {
  assignWithLimit,
  ByteTracker,
  initiate,
  linearSumAssignment,
  predict,
  trackClip,
  trackDetections,
  update,
} from '../../../src/workers/track/index.ts';
import { detectionsHeader } from '../support/tracks.ts';

const box = (cx: number, cy: number, w = 20, h = 50): BoxXyxy => [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];

describe('Kalman filter', () => {
  it('learns a constant velocity and predicts the next position', () => {
    let state = initiate([100, 200, 0.4, 50]);
    for (let t = 1; t <= 50; t++) {
      state = predict(state);
      state = update(state, [100 + 5 * t, 200 - 2 * t, 0.4, 50]);
    }
    const next = predict(state);
    expect(next.mean[0]).toBeCloseTo(355, 0);
    expect(next.mean[1]).toBeCloseTo(98, 0);
    expect(next.mean[4]).toBeCloseTo(5, 1);
    expect(next.mean[5]).toBeCloseTo(-2, 1);
  });
});

describe('assignment', () => {
  it('prefers leaving pairs unmatched to expensive matches, as lapjv with a cost limit', () => {
    // {A–X, B–Y} costs 1.58; {A–Y} + two unmatched at limit/2 each costs 0.9.
    const result = assignWithLimit(
      [
        [0.79, 0.1],
        [0.9, 0.79],
      ],
      2,
      2,
      0.8,
    );
    expect(result).toEqual({ matches: [[0, 1]], unmatchedRows: [1], unmatchedColumns: [0] });
  });

  it('matches scipy linear_sum_assignment on a rectangular maximisation', () => {
    // scipy: linear_sum_assignment([[1, 5, 2], [4, 3, 6]], maximize=True) → rows [0, 1], cols [1, 2]
    expect(
      linearSumAssignment(
        [
          [1, 5, 2],
          [4, 3, 6],
        ],
        true,
      ),
    ).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });
});

describe('ByteTracker', () => {
  it('keeps ids through a crossing with an occlusion and weak boxes', () => {
    const tracker = new ByteTracker({ lostTrackBufferFrames: 30 });
    const seen: Map<number, number>[] = [];
    for (let f = 0; f < 60; f++) {
      const a = box(100 + 5 * f, 200); // moves right
      const b = box(400 - 5 * f, 215); // moves left, passes in front of a around f = 30
      const detections = [{ box: b, score: 0.9 }];
      if (f < 26 || f > 34) detections.push({ box: a, score: 0.9 });
      else if (f < 29) detections.push({ box: a, score: 0.3 }); // partly hidden: a weak box
      const out = tracker.update(detections);
      seen.push(new Map(out.map((o) => [o.detectionIndex, o.trackId])));
    }
    const idOfB = seen[0]!.get(0);
    const idOfA = seen[0]!.get(1);
    expect(idOfA).toBeDefined();
    expect(new Set([idOfA, idOfB]).size).toBe(2);
    // Weak boxes keep A tracked (second association).
    expect(seen[27]!.get(1)).toBe(idOfA);
    // After the occlusion both keep their ids.
    expect(seen[40]!.get(0)).toBe(idOfB);
    expect(seen[40]!.get(1)).toBe(idOfA);
    expect(seen[59]!.get(1)).toBe(idOfA);
  });

  it('starts a track only from a confident box and confirms it on its second frame', () => {
    const tracker = new ByteTracker();
    expect(tracker.update([])).toEqual([]);
    expect(tracker.update([{ box: box(50, 50), score: 0.55 }])).toEqual([]); // below new-track threshold 0.6
    expect(tracker.update([{ box: box(50, 50), score: 0.9 }])).toEqual([]); // tentative
    const out = tracker.update([{ box: box(52, 50), score: 0.9 }]);
    expect(out.map((o) => o.trackId)).toEqual([1]);
  });

  it('forgets a track lost for longer than the buffer', () => {
    const tracker = new ByteTracker({ lostTrackBufferFrames: 5 });
    tracker.update([{ box: box(50, 50), score: 0.9 }]);
    tracker.update([{ box: box(50, 50), score: 0.9 }]);
    for (let i = 0; i < 8; i++) tracker.update([]);
    tracker.update([{ box: box(50, 50), score: 0.9 }]);
    const out = tracker.update([{ box: box(50, 50), score: 0.9 }]);
    expect(out[0]!.trackId).toBe(2);
  });
});

describe('trackDetections', () => {
  it('tracks people and the ball separately, interpolates short gaps and drops short tracks', () => {
    const frames = Array.from({ length: 40 }, (_, f) => ({
      frame: f,
      tMs: f * 40,
      detections: [
        ...(f >= 10 && f < 14 ? [] : [{ class: 'player' as const, score: 0.9, box: box(100 + 3 * f, 300) }]),
        // The ball rolls beside the player, not at his feet (a ball that only ever follows one player's feet is
        // the ball only as a dribble joined to its path: ball-track.test.ts).
        { class: 'ball' as const, score: 0.8, box: box(100 + 3 * f, 360, 8, 8) },
        ...(f < 2 ? [{ class: 'player' as const, score: 0.9, box: box(600, 100) }] : []),
      ],
    }));
    const file: DetectionsFile = {
      header: {
        format: 'polyvision.detections',
        version: 1,
        source: { width: 1280, height: 720, fps: 25, frameCount: 40, durationMs: 1600 },
        analysisFps: 25,
        model: {
          version: 't',
          sha256: 'x',
          layout: 'yolox',
          inputWidth: 416,
          inputHeight: 416,
          executionProvider: 'cpu',
          tiles: 1,
        },
        classes: ['player', 'ball'],
      },
      frames,
    };
    const tracks = trackDetections(file);
    // The ball track (from the ball tracker) comes after every person track.
    expect(tracks.tracks.map((t) => [t.id, t.class])).toEqual([
      [1, 'player'],
      [2, 'ball'],
    ]);
    const player = tracks.tracks[0]!;
    expect(player.frames.map((f) => f.frame)).toEqual([...Array(40).keys()]);
    const gap = player.frames[11]!;
    expect(gap.interpolated).toBe(true);
    expect((gap.box[0] + gap.box[2]) / 2).toBeCloseTo(133, 0);
    expect(tracks.tracks[1]!.frames).toHaveLength(40);
  });
});

describe('camera-motion compensation', () => {
  /**
   * Twelve people walking slowly right (1 px a frame) in a 4 × 3 grid, 70 px apart, filmed by a
   * camera that moves `step(f)` px right into frame f; each frame carries the camera's motion as the
   * detect stage writes it (none on `first`, the first frame of a segment). Person 0 is not detected in
   * frames 20–22 (hidden).
   */
  function pannedClip(step: (f: number) => number, from = 0, to = 40, pan0 = 0): DetectionsFile {
    let pan = pan0;
    const frames = [];
    for (let f = from; f < to; f++) {
      const moved = f === 0 ? 0 : step(f);
      pan += moved;
      frames.push({
        frame: f,
        tMs: f * 100,
        ...(moved !== 0 && f !== from
          ? { cameraMotion: [1, 0, -moved, 0, 1, 0] as [number, number, number, number, number, number] }
          : {}),
        detections: Array.from({ length: 12 }, (_, i) => ({
          class: 'player' as const,
          score: 0.9,
          box: box(400 + 70 * (i % 4) + f - pan, 250 + 90 * Math.floor(i / 4), 24, 60),
        })).filter((_, i) => i !== 0 || f < 20 || f > 22),
      });
    }
    return {
      header: {
        ...detectionsHeader(100, 25, 1280, 720, 10),
        cameraMotion: { method: 'lk-affine-ransac', workingWidthPx: 640, moving: 1, still: 0, unknown: 0, skipped: 0 },
      },
      frames,
    };
  }
  const thresholds = { highScoreThreshold: 0.5, lowScoreThreshold: 0.1 };
  const swing = (f: number) => 40 * Math.sin((2 * Math.PI * f) / 6);

  it('keeps every id through a swinging pan when the frames carry the camera motion', () => {
    const clip = pannedClip(swing);
    const withMotion = trackDetections(clip, thresholds);
    expect(withMotion.tracks).toHaveLength(12);
    for (const track of withMotion.tracks) expect(track.frames).toHaveLength(40);
    // The gap is filled where the person stood on the pitch, not on a line across the swinging picture.
    const first = withMotion.tracks.find((t) => t.frames[0]!.box[0] < 400)!;
    const filled = first.frames.filter((f) => f.interpolated);
    expect(filled.map((f) => f.frame)).toEqual([20, 21, 22]);
    for (const f of filled) {
      const truth = clip.frames[f.frame]!.detections[0]!.box[0] - 70; // person 1 (first while 0 is hidden) is 70 px right
      expect(Math.abs(f.box[0] - truth)).toBeLessThan(1);
    }
    // The same detections without the compensation: the predictions swing away and ids break.
    const without = trackDetections(clip, { ...thresholds, cameraMotion: false });
    expect(without.tracks.length).toBeGreaterThan(12);
  });

  it("carries the camera's motion over a segment boundary, where the first frame has none measured", () => {
    const pan = () => 45; // a steady pan, 45 px right per analysed frame
    const firstSegment = trackClip(pannedClip(pan, 0, 15), { ...thresholds, segment: { carry: null } });
    expect(firstSegment.carry.cameraMotion).toEqual([1, 0, -45, 0, 1, 0]);
    const second = pannedClip(pan, 15, 30, 45 * 14);
    expect(second.frames[0]!.cameraMotion).toBeUndefined();
    const ids = (clip: ReturnType<typeof trackClip>) => clip.tracks.tracks.map((t) => t.id);
    const carried = trackClip(second, { ...thresholds, segment: { carry: firstSegment.carry } });
    expect(new Set([...ids(firstSegment), ...ids(carried)]).size).toBe(12);
    // Without the carried motion the boundary frame's predictions stay 45 px behind: new ids.
    const { cameraMotion: _, ...carryWithout } = firstSegment.carry;
    const lost = trackClip(second, { ...thresholds, segment: { carry: carryWithout } });
    expect(new Set([...ids(firstSegment), ...ids(lost)]).size).toBeGreaterThan(12);
  });

  it('tracks the ball where the pitch stands still: pitch marks stay static, the ball does not jump', () => {
    // The camera swings as above; the ball rolls 4 px a frame along the pitch; two pitch marks the
    // detector takes for balls lie still on the pitch.
    let pan = 0;
    const clip = pannedClip(swing);
    for (const f of clip.frames) {
      pan = f.frame === 0 ? 0 : pan + swing(f.frame);
      const ball = { class: 'ball' as const, score: 0.9, box: box(300 + 4 * f.frame - pan, 500, 8, 8) };
      const marks = [520, 760].map((x) => ({ class: 'ball' as const, score: 0.6, box: box(x - pan, 420, 8, 8) }));
      f.detections.push(ball, ...marks);
    }
    const { ballTrack } = trackClip(clip, thresholds);
    expect(ballTrack.summary.rejected.static).toBe(80); // both marks in every frame
    expect(ballTrack.summary.detected).toBe(40);
    for (const f of ballTrack.frames) {
      const truth = clip.frames[f.frame]!.detections.find((d) => d.class === 'ball')!.box;
      expect(f.x).toBeCloseTo((truth[0] + truth[2]) / 2, 0); // written back in the frame's own pixels
    }
    // Without the compensation the marks move with the picture and are not seen as static.
    const without = trackClip(clip, { ...thresholds, cameraMotion: false });
    expect(without.ballTrack.summary.rejected.static).toBeLessThan(80);
  });
});

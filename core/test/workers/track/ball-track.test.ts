import { describe, expect, it } from 'vitest';
import { type BallCandidate, filterBallCandidates, PointKalman, trackBall } from '../../../src/workers/track/index.ts';

const FPS = 10;
const times = (n: number) => Array.from({ length: n }, (_, i) => i / FPS);
/** The ball rolling right along y = 200, 12 px per analysed frame from x = 100. */
const ballAt = (frame: number, score = 0.5): BallCandidate => ({
  frame,
  x: 100 + 12 * frame,
  y: 200,
  sizePx: 6,
  score,
});

describe('ball Kalman filter', () => {
  it('learns a constant velocity', () => {
    const k = new PointKalman({ accelerationPxPerS2: 100, measurementPx: 1, initialSpeedPxPerS: 500 });
    let s = k.initiate(0, 0);
    for (let i = 1; i <= 20; i++) s = k.update(k.predict(s, 0.1), 30 * i, -10 * i);
    expect(s.x.v).toBeCloseTo(300, 0);
    expect(s.y.v).toBeCloseTo(-100, 0);
    const next = k.predict(s, 0.1);
    expect(next.x.p).toBeCloseTo(630, 0);
    expect(k.mahalanobis2(next, 630, -210)).toBeLessThan(1);
    expect(k.mahalanobis2(next, 800, -210)).toBeGreaterThan(13.8);
  });
});

describe('ball candidates', () => {
  it('rejects a blob that stays on a pitch line and keeps the moving ball', () => {
    const candidates: BallCandidate[] = [];
    for (let f = 0; f < 30; f++) {
      candidates.push(ballAt(f));
      candidates.push({ frame: f, x: 1000 + (f % 2) * 0.5, y: 300, sizePx: 5, score: 0.9 }); // a line mark
    }
    const { kept, rejected } = filterBallCandidates(candidates, { fps: FPS });
    expect(rejected.static).toBe(30);
    expect(kept).toHaveLength(30);
    expect(kept.every((c) => c.x < 1000)).toBe(true);
  });

  it('leaves out candidates off the pitch and below the score floor', () => {
    const { kept, rejected } = filterBallCandidates(
      [ballAt(0), { ...ballAt(1), y: 20 }, { ...ballAt(2), score: 0.05 }],
      { fps: FPS, minScore: 0.1, onPitch: (_x, y) => y > 50 },
    );
    expect(kept.map((c) => c.frame)).toEqual([0]);
    expect(rejected).toEqual({ lowScore: 1, offPitch: 1, static: 0, beyondTopK: 0 });
  });

  it('keeps the 10 best-scored of a frame crowded with "balls", and the ball among them', () => {
    // 20 blobs a frame scattered over the pitch, scoring below the ball (a model that fires on everything).
    const candidates: BallCandidate[] = [];
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    for (let f = 0; f < 30; f++) {
      candidates.push(ballAt(f));
      for (let k = 0; k < 20; k++) {
        candidates.push({
          frame: f,
          x: 100 + random() * 1800,
          y: 20 + random() * 360,
          sizePx: 6,
          score: 0.1 + 0.3 * random(),
        });
      }
    }
    const { kept, rejected } = filterBallCandidates(candidates, { fps: FPS });
    expect(rejected.beyondTopK).toBe(30 * 11);
    expect(kept).toHaveLength(30 * 10);
    const { frames } = trackBall(candidates, times(30), { fps: FPS, frameWidthPx: 2000 });
    expect(frames.every((f) => f.y === 200 && f.state === 'detected')).toBe(true);
  });
});

describe('trackBall', () => {
  it('gates out a far false alarm, interpolates a short gap and keeps one ball per frame', () => {
    const candidates: BallCandidate[] = [];
    for (let f = 0; f < 30; f++) if (f < 10 || f > 12) candidates.push(ballAt(f));
    candidates.push({ frame: 11, x: 1500, y: 100, sizePx: 6, score: 0.95 }); // a one-frame false alarm
    const { frames, summary } = trackBall(candidates, times(30), { fps: FPS, frameWidthPx: 2000 });
    expect(frames).toHaveLength(30);
    for (const f of frames) {
      expect(f.x).toBeCloseTo(100 + 12 * f.frame, 5);
      expect(f.y).toBe(200);
    }
    expect(frames.filter((f) => f.state === 'interpolated').map((f) => f.frame)).toEqual([10, 11, 12]);
    expect(summary).toMatchObject({ detected: 27, interpolated: 3, predicted: 0, lost: 0, coverage: 1 });
    expect(frames[5]).toMatchObject({ t: 0.5, state: 'detected', score: 0.5 });
  });

  it('predicts briefly after the last detection, then says lost', () => {
    const candidates = Array.from({ length: 10 }, (_, f) => ballAt(f));
    const { frames } = trackBall(candidates, times(20), { fps: FPS, frameWidthPx: 2000, maxPredictFrames: 3 });
    expect(frames.slice(10, 13).map((f) => f.state)).toEqual(['predicted', 'predicted', 'predicted']);
    expect(frames[11]!.x).toBeCloseTo(100 + 12 * 11, 5);
    expect(frames.slice(13).every((f) => f.state === 'lost' && f.x === null)).toBe(true);
  });

  it('does not take a static mark as the ball, even with a higher score', () => {
    const candidates: BallCandidate[] = [];
    for (let f = 0; f < 40; f++) {
      candidates.push({ frame: f, x: 700, y: 250, sizePx: 6, score: 0.9 });
      if (f >= 20) candidates.push({ ...ballAt(f - 20, 0.3), frame: f });
    }
    const { frames, summary } = trackBall(candidates, times(40), { fps: FPS, frameWidthPx: 2000 });
    expect(frames.slice(0, 20).every((f) => f.state === 'lost')).toBe(true);
    expect(frames.slice(20).every((f) => f.state === 'detected' && f.x !== 700)).toBe(true);
    expect(summary.rejected.static).toBe(40);
  });

  it('leaves out a ball at rest seen in too few frames for the static test (a spare ball by the touchline)', () => {
    // The ball in play in frames 0–9; a spare ball at rest scoring higher, seen only in frames 20–27 (8 of 40:
    // fewer than the candidates' static test needs), then nothing.
    const candidates: BallCandidate[] = [];
    for (let f = 0; f < 10; f++) candidates.push(ballAt(f, 0.3));
    for (let f = 20; f < 28; f++)
      candidates.push({ frame: f, x: 523 + (f % 2) * 0.3, y: 1401, sizePx: 8, score: 0.37 });
    const { frames, summary } = trackBall(candidates, times(40), { fps: FPS, frameWidthPx: 3072 });
    expect(summary.rejected.static).toBe(0);
    expect(summary.stillTracklets).toBe(1);
    expect(summary.chosenTracklets).toBe(1);
    expect(frames.slice(0, 10).every((f) => f.state === 'detected' && f.y === 200)).toBe(true);
    expect(frames.slice(20).every((f) => f.state === 'lost')).toBe(true);
  });

  it('chooses the longer, stronger path when two tracklets overlap in time', () => {
    const candidates: BallCandidate[] = [];
    for (let f = 0; f < 20; f++) candidates.push(ballAt(f));
    // A short fast-moving false path on the other side of the frame.
    for (let f = 5; f < 9; f++) candidates.push({ frame: f, x: 1800 - 20 * f, y: 50, sizePx: 6, score: 0.6 });
    const { frames, summary } = trackBall(candidates, times(20), { fps: FPS, frameWidthPx: 2000 });
    expect(summary.chosenTracklets).toBe(1);
    expect(frames.every((f) => f.y === 200 && f.state === 'detected')).toBe(true);
  });

  it('prefers the ball leaving a player to a boot that follows the player', () => {
    const candidates: BallCandidate[] = [];
    const people = new Map<number, { id: number; box: [number, number, number, number] }[]>();
    for (let f = 0; f < 30; f++) {
      const px = 300 + 4 * f; // a player running right, box 16×48 px, feet at y = 248
      people.set(f, [{ id: 7, box: [px - 8, 200, px + 8, 248] }]);
      candidates.push({ frame: f, x: px + 3, y: 245, sizePx: 5, score: 0.6 }); // his boot
      candidates.push({ frame: f, x: 300 + 15 * f, y: 400 - 5 * f, sizePx: 5, score: 0.3 }); // the ball, passed away
    }
    const withoutPeople = trackBall(candidates, times(30), { fps: FPS, frameWidthPx: 2000 });
    expect(withoutPeople.frames.every((f) => f.y === 245)).toBe(true); // the boot scores higher
    const { frames, summary } = trackBall(candidates, times(30), { fps: FPS, frameWidthPx: 2000, people });
    expect(summary.followingPlayer).toBe(1);
    expect(frames.every((f) => f.state === 'detected' && f.x === 300 + 15 * f.frame)).toBe(true);
  });

  it("takes a player's boots as the ball only as a dribble that continues the ball's path", () => {
    // A player walking right from frame 16, feet at y = 200; the ball comes down to him in frames 0–9 and is
    // not seen for 6 frames (its tracklet ends), then only his boot is (frames 16–29).
    const people = new Map<number, { id: number; box: [number, number, number, number] }[]>();
    const boot = (f: number): BallCandidate => ({ frame: f, x: 240 + 2 * (f - 16), y: 198, sizePx: 5, score: 0.5 });
    for (let f = 0; f < 30; f++) {
      const px = 237 + 2 * Math.max(0, f - 16);
      people.set(f, [{ id: 4, box: [px - 8, 152, px + 8, 202] }]);
    }
    const ball = Array.from({ length: 10 }, (_, f) => ({ frame: f, x: 240, y: 400 - 20 * f, sizePx: 5, score: 0.5 }));
    const boots = Array.from({ length: 14 }, (_, k) => boot(16 + k));
    const options = { fps: FPS, frameWidthPx: 2000, people };

    const dribble = trackBall([...ball, ...boots], times(30), options);
    expect(dribble.summary).toMatchObject({ followingPlayer: 1, chosenTracklets: 2 });
    expect(dribble.frames.slice(16).every((f) => f.state === 'detected' && f.y === 198)).toBe(true);
    expect(dribble.frames.slice(10, 16).every((f) => f.state === 'interpolated')).toBe(true);

    // The same boot with no ball arriving: never the ball on its own.
    const alone = trackBall(boots, times(30), options);
    expect(alone.summary).toMatchObject({ followingPlayer: 1, chosenTracklets: 0 });
    expect(alone.frames.every((f) => f.state === 'lost')).toBe(true);
  });

  it('does not follow a boot it meets in the one frame the ball is missed', () => {
    const candidates: BallCandidate[] = [];
    for (let f = 0; f < 30; f++) {
      if (f !== 10) candidates.push(ballAt(f));
      // A boot running beside the ball from frame 10 on, 40 px below it.
      if (f >= 10) candidates.push({ ...ballAt(f), y: 240 });
    }
    const { frames } = trackBall(candidates, times(30), { fps: FPS, frameWidthPx: 2000 });
    expect(frames.every((f) => f.y === 200)).toBe(true);
    // With the gate of a motion model that expects kicks every frame (the old 1.5 · width per s²) the
    // ball's tracklet takes the boot at frame 10 and follows it for a frame more.
    const wide = trackBall(candidates, times(30), { fps: FPS, frameWidthPx: 2000, accelerationPxPerS2: 3000 });
    expect(wide.frames.slice(10, 12).map((f) => [f.state, f.y])).toEqual([
      ['detected', 240],
      ['detected', 240],
    ]);
  });
});

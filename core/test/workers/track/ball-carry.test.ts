import { PolyvisionError } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import type { DetectionsFile } from '../../../src/workers/detect/index.ts';
import {
  BALL_CARRY_S,
  type BallTrackFile,
  mergeSegmentBallTracks,
  type TrackCarry,
  trackCarryAcrossGap,
  trackCarrySchema,
  trackClip,
} from '../../../src/workers/track/index.ts';
import { detectionsHeader } from '../support/tracks.ts';

const FPS = 10;
const SEGMENT_FRAMES = 20; // 2 s segments
const MARK_X = 700;
/** The ball rolling right along y = 200, 12 px per analysed frame of the match. */
const ballX = (matchFrame: number) => 100 + 12 * matchFrame;

/**
 * Segment `index` of a match: a player standing still (so the segment has a person to track), the
 * ball (score 0.5) in every match frame but 18–25 — a gap of 8 analysed frames across the first
 * boundary — and a pitch-line mark (score 0.9, x = 700) that the detector sees in match frames 12–25.
 */
function segment(index: number): DetectionsFile {
  return {
    header: detectionsHeader((SEGMENT_FRAMES / FPS) * 25, 25, 2000, 400, FPS),
    frames: Array.from({ length: SEGMENT_FRAMES }, (_, k) => {
      const m = index * SEGMENT_FRAMES + k;
      const ball = (x: number, score: number) => ({
        class: 'ball' as const,
        score,
        box: [x - 3, 197, x + 3, 203] as [number, number, number, number],
      });
      return {
        frame: k,
        tMs: (k * 1000) / FPS,
        detections: [
          { class: 'player' as const, score: 0.9, box: [1500, 150, 1520, 210] as [number, number, number, number] },
          ...(m < 18 || m > 25 ? [ball(ballX(m), 0.5)] : []),
          ...(m >= 12 && m <= 25 ? [ball(MARK_X, 0.9)] : []),
        ],
      };
    }),
  };
}

const options = { highScoreThreshold: 0.5, lowScoreThreshold: 0.1 };

describe('the ball track across a match segment boundary', () => {
  const first = trackClip(segment(0), { ...options, segment: { carry: null } });
  // Through JSON, as the carry artifact goes.
  const carry: TrackCarry = trackCarrySchema.parse(JSON.parse(JSON.stringify(first.carry)));
  const onLine = (track: BallTrackFile, frame: number) => track.frames[frame]!.x === ballX(SEGMENT_FRAMES + frame);

  it("carries the last BALL_CARRY_S seconds of the segment, on the next segment's clock", () => {
    expect(carry.ball!.frameTimesS).toHaveLength(BALL_CARRY_S * FPS);
    expect(carry.ball!.frameTimesS[0]).toBeCloseTo(-2, 6);
    expect(carry.ball!.frameTimesS.at(-1)).toBeCloseTo(-0.1, 6);
    // 18 ball boxes and 8 mark boxes in the last 2 s of segment 0.
    expect(carry.ball!.candidates).toHaveLength(18 + 8);
  });

  it('with the carry, interpolates the ball across the boundary and rejects the mark that straddles it', () => {
    const second = trackClip(segment(1), { ...options, segment: { carry } }).ballTrack;
    expect(second.frames).toHaveLength(SEGMENT_FRAMES);
    expect(second.frames.map((f) => f.frame)).toEqual(Array.from({ length: SEGMENT_FRAMES }, (_, k) => k));
    expect(second.frames[0]!.t).toBe(0);
    for (let k = 0; k <= 5; k++) {
      expect(second.frames[k]!.state).toBe('interpolated');
      expect(onLine(second, k)).toBe(true);
    }
    for (let k = 6; k < SEGMENT_FRAMES; k++) expect(second.frames[k]).toMatchObject({ state: 'detected', score: 0.5 });
    // The summary counts the segment's own frames and candidates only.
    expect(second.summary).toMatchObject({ frames: 20, candidates: 14 + 6, interpolated: 6, detected: 14, lost: 0 });
    expect(second.summary.rejected.static).toBe(6);
  });

  it('without it (a fresh ball tracker per segment) loses the ball at the segment start', () => {
    const alone = trackClip(segment(1), { ...options, segment: { carry: null } }).ballTrack;
    // Nothing to interpolate from; the mark, seen in too few of the segment's frames for the static test,
    // is left out only as a tracklet that never moved (a ball at rest).
    expect(alone.frames.slice(0, 6).every((f) => f.state === 'lost')).toBe(true);
    expect(alone.summary.rejected.static).toBe(0);
    expect(alone.summary.stillTracklets).toBe(1);
    expect(alone.frames[6]).toMatchObject({ state: 'detected', x: ballX(SEGMENT_FRAMES + 6) });
  });

  it('joins the segments into the match ball track: match frames and times, the ball on its line across the boundary', () => {
    const place = (index: number) => ({
      index,
      startS: (index * SEGMENT_FRAMES) / FPS,
      firstMatchFrame: index * SEGMENT_FRAMES,
    });
    const zero = { ...first.ballTrack, segment: place(0) };
    const one = { ...trackClip(segment(1), { ...options, segment: { carry } }).ballTrack, segment: place(1) };
    const match = mergeSegmentBallTracks([one, zero]);
    expect(match.frames.map((f) => f.frame)).toEqual(Array.from({ length: 2 * SEGMENT_FRAMES }, (_, k) => k));
    expect(match.frames[SEGMENT_FRAMES]!.t).toBeCloseTo(SEGMENT_FRAMES / FPS, 6);
    // Across the gap (match frames 18–25), positions on the ball's line; the mark at x = 700 is never the ball.
    for (let m = SEGMENT_FRAMES; m <= 25; m++) expect(match.frames[m]!.x).toBe(ballX(m));
    expect(match.frames.some((f) => f.x === MARK_X)).toBe(false);
    const sum = (k: 'frames' | 'detected' | 'interpolated' | 'lost' | 'candidates') => zero.summary[k] + one.summary[k];
    expect(match.summary).toMatchObject({
      frames: sum('frames'),
      detected: sum('detected'),
      interpolated: sum('interpolated'),
      lost: sum('lost'),
      candidates: sum('candidates'),
    });
    expect(match.summary.coverage).toBeCloseTo(1 - sum('lost') / sum('frames'), 4);
    expect(match.segment).toBeUndefined();
    // Files that are not segments of one match are refused, not joined wrong.
    expect(() => mergeSegmentBallTracks([])).toThrow(PolyvisionError);
    expect(() => mergeSegmentBallTracks([first.ballTrack])).toThrow(/without `segment`/);
    expect(() => mergeSegmentBallTracks([zero, zero])).toThrow(/segment 0 given twice/);
  });

  it('starts the ball fresh after a gap in the match, at another analysis rate, and from a carry written before the ball was carried', () => {
    expect(trackCarryAcrossGap(carry, 2, FPS).ball).toBeUndefined();
    const otherRate = { ...carry, ball: { ...carry.ball!, analysisFps: 5 } };
    const restarted = trackClip(segment(1), { ...options, segment: { carry: otherRate } }).ballTrack;
    expect(restarted.frames[0]).toMatchObject({ state: 'lost' });
    expect(restarted.options.contextFrames).toBe(0);
    const { ball: _ball, ...older } = carry;
    const fresh = trackClip(segment(1), { ...options, segment: { carry: trackCarrySchema.parse(older) } }).ballTrack;
    expect(fresh.frames[0]).toMatchObject({ state: 'lost' });
    expect(fresh.options.contextFrames).toBe(0);
  });
});

import type { DetectionsFile } from '../../detect/detections-format.ts';
import type { BallCandidate } from './ball-candidates.ts';
import { type BallCarry, ballCarryOf } from './ball-carry.ts';
import { BALL_TRACK_FORMAT, type BallTrackFile } from './ball-track-format.ts';
import { type BallTrackOptions, trackBall } from './ball-tracker.ts';

/** Options of {@link ballTrackFromDetections}. */
export type BallTrackFromDetectionsOptions = Omit<BallTrackOptions, 'fps' | 'frameWidthPx' | 'contextFrames'> & {
  /**
   * The previous segment's end (a match's segment after the first); absent: the clip stands alone.
   * Used only when it was analysed at the file's rate.
   */
  context?: BallCarry | null;
};

/**
 * The ball track of a detections file (every `ball` box is a candidate): `trackBall` over the
 * analysed frames — after the carried context's frames, when there is one — as the `ball-track.json`
 * document (the file's own frames only), and the `BallCarry` for the segment after it.
 * `people` is keyed by the file's own analysed frame index.
 */
export function ballTrackFromDetections(
  detections: DetectionsFile,
  options: BallTrackFromDetectionsOptions = {},
): { ballTrack: BallTrackFile; carry: BallCarry } {
  const { context: carried, people: ownPeople, ...trackOptions } = options;
  const fps = detections.header.analysisFps;
  const context = carried && carried.analysisFps === fps ? carried : null;
  const contextFrames = context?.frameTimesS.length ?? 0;
  const candidates: BallCandidate[] = context ? context.candidates.map((c) => ({ ...c })) : [];
  const times: number[] = context ? [...context.frameTimesS] : [];
  detections.frames.forEach((f, index) => {
    times[contextFrames + index] = f.tMs / 1000;
    for (const d of f.detections) {
      if (d.class !== 'ball') continue;
      candidates.push({
        frame: contextFrames + index,
        x: (d.box[0] + d.box[2]) / 2,
        y: (d.box[1] + d.box[3]) / 2,
        sizePx: (d.box[2] - d.box[0] + d.box[3] - d.box[1]) / 2,
        score: d.score,
      });
    }
  });
  const people = ownPeople && contextFrames > 0 ? shiftKeys(ownPeople, contextFrames) : ownPeople;
  const { frames, summary } = trackBall(candidates, times, {
    ...trackOptions,
    ...(people ? { people } : {}),
    fps,
    frameWidthPx: detections.header.source.width,
    contextFrames,
  });
  const { onPitch, ...plain } = trackOptions;
  return {
    ballTrack: {
      format: BALL_TRACK_FORMAT,
      version: 1,
      source: { width: detections.header.source.width, height: detections.header.source.height },
      analysisFps: fps,
      frames,
      summary,
      options: {
        ...plain,
        pitchRegion: onPitch !== undefined,
        people: ownPeople !== undefined,
        contextFrames,
      },
    },
    carry: ballCarryOf(times, candidates, fps, detections.header.source.durationMs / 1000, options.minScore),
  };
}

function shiftKeys<T>(map: ReadonlyMap<number, T>, by: number): Map<number, T> {
  return new Map([...map].map(([k, v]) => [k + by, v]));
}

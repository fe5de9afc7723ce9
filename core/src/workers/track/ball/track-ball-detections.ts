import {
  applyCameraMotion,
  type CameraMotion,
  cameraMotionScale,
  invertCameraMotion,
  moveBox,
} from '../../detect/camera-motion.ts';
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
  /**
   * Per analysed frame number, the motion taking its pixels to the first frame's
   * (`motionsToFirstFrame`), when the camera moved: the ball is tracked in the first frame's pixels,
   * where a pan neither moves a pitch mark (the static test) nor makes the ball jump (the motion
   * model), and written back in each frame's own. Such a segment starts its ball track afresh: its
   * context's pixels are another segment's.
   */
  toFirstFrame?: ReadonlyMap<number, CameraMotion> | null;
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
  const { context: carried, people: ownPeople, toFirstFrame, ...trackOptions } = options;
  const fps = detections.header.analysisFps;
  const moved = toFirstFrame ?? null;
  const context = carried && carried.analysisFps === fps && !moved ? carried : null;
  const contextFrames = context?.frameTimesS.length ?? 0;
  const candidates: BallCandidate[] = context ? context.candidates.map((c) => ({ ...c })) : [];
  const times: number[] = context ? [...context.frameTimesS] : [];
  /** Own frame index → the motion to the first frame's pixels (none: the camera did not move). */
  const toFirst = (index: number) => moved?.get(detections.frames[index]!.frame);
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
  const tracked = moved
    ? candidates.map((c) => {
        const motion = toFirst(c.frame);
        if (!motion) return c;
        const [x, y] = applyCameraMotion(motion, c.x, c.y);
        return { ...c, x, y, sizePx: c.sizePx * cameraMotionScale(motion) };
      })
    : candidates;
  let people = ownPeople && contextFrames > 0 ? shiftKeys(ownPeople, contextFrames) : ownPeople;
  if (people && moved) {
    people = new Map(
      [...people].map(([index, list]) => {
        const motion = toFirst(index);
        return [index, motion ? list.map((p) => ({ ...p, box: moveBox(motion, p.box) })) : list];
      }),
    );
  }
  /** A point of the first frame's pixels back in frame `index`'s (a moving camera's segment has no context). */
  const inFrame = (index: number, x: number, y: number): [number, number] => {
    const motion = toFirst(index);
    return motion ? applyCameraMotion(invertCameraMotion(motion), x, y) : [x, y];
  };
  const onPitch = trackOptions.onPitch;
  const { frames: trackedFrames, summary } = trackBall(tracked, times, {
    ...trackOptions,
    ...(people ? { people } : {}),
    ...(onPitch && moved
      ? { onPitch: (x: number, y: number, frame: number) => onPitch(...inFrame(frame, x, y), frame) }
      : {}),
    fps,
    frameWidthPx: detections.header.source.width,
    contextFrames,
  });
  const frames = moved
    ? trackedFrames.map((f) => {
        if (f.x === null || f.y === null) return f;
        const [x, y] = inFrame(f.frame, f.x, f.y);
        return { ...f, x: Math.round(x * 10) / 10, y: Math.round(y * 10) / 10 };
      })
    : trackedFrames;
  const { onPitch: _onPitch, ...plain } = trackOptions;
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
        ...(moved ? { cameraMotion: true } : {}),
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

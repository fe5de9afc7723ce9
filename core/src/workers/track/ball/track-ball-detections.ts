import type { DetectionsFile } from '../../detect/detections-format.ts';
import type { BallCandidate } from './ball-candidates.ts';
import { BALL_TRACK_FORMAT, type BallTrackFile } from './ball-track-format.ts';
import { type BallTrackOptions, trackBall } from './ball-tracker.ts';

/**
 * The ball track of a detections file (every `ball` box is a candidate): `trackBall` over the
 * analysed frames, as the `ball-track.json` document.
 */
export function ballTrackFromDetections(
  detections: DetectionsFile,
  options: Omit<BallTrackOptions, 'fps' | 'frameWidthPx'> = {},
): BallTrackFile {
  const candidates: BallCandidate[] = [];
  const times: number[] = [];
  detections.frames.forEach((f, index) => {
    times[index] = f.tMs / 1000;
    for (const d of f.detections) {
      if (d.class !== 'ball') continue;
      candidates.push({
        frame: index,
        x: (d.box[0] + d.box[2]) / 2,
        y: (d.box[1] + d.box[3]) / 2,
        sizePx: (d.box[2] - d.box[0] + d.box[3] - d.box[1]) / 2,
        score: d.score,
      });
    }
  });
  const fps = detections.header.analysisFps;
  const { frames, summary } = trackBall(candidates, times, {
    ...options,
    fps,
    frameWidthPx: detections.header.source.width,
  });
  const { onPitch, people, ...plain } = options;
  return {
    format: BALL_TRACK_FORMAT,
    version: 1,
    source: { width: detections.header.source.width, height: detections.header.source.height },
    analysisFps: fps,
    frames,
    summary,
    options: { ...plain, pitchRegion: onPitch !== undefined, people: people !== undefined },
  };
}

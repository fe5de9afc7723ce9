import type { DetectionsFile } from '../detect/detections-format.ts';
import { type MediaBinaries, probeVideo, readVideoFrames } from '../detect/frames/index.ts';
import { torsoHistogram } from './appearance.ts';

/** Per analysed frame (position in `detections.frames`), one feature per detection (null: none). */
export type AppearanceFeatures = Map<number, (Float32Array | null)[]>;

/**
 * Appearance features of every person box: the video decoded once at its own rate and full size
 * (players are a few pixels wide in a panorama; a resampling filter would show other frames than
 * the detector saw), and for each analysed frame the decoded frame nearest its `tMs` (within half a
 * source frame, else that frame's boxes get no feature and are associated by motion alone),
 * `torsoHistogram` of each person box. Frames between analysed ones are decoded and skipped.
 *
 * @param onProgress - share of frames decoded, in [0, 1].
 * @throws the `readVideoFrames` errors (`video_corrupt`, `video_truncated`) and the abort reason.
 */
export async function appearanceFeatures(
  videoPath: string,
  detections: DetectionsFile,
  options: { signal?: AbortSignal; binaries?: MediaBinaries; onProgress?: (fraction: number) => void } = {},
): Promise<AppearanceFeatures> {
  const features: AppearanceFeatures = new Map();
  const info = await probeVideo(videoPath, { signal: options.signal, binaries: options.binaries, minDurationMs: 0 });
  const scale = info.width / detections.header.source.width;
  const halfFrameMs = 500 / info.fps;
  const total = detections.frames.length;
  let k = 0;
  for await (const frame of readVideoFrames(videoPath, {
    info,
    signal: options.signal,
    binaries: options.binaries,
    minDecodedShare: 0,
  })) {
    while (k < total && detections.frames[k]!.tMs < frame.timeMs - halfFrameMs) k += 1;
    if (k >= total) break;
    const analysed = detections.frames[k]!;
    if (Math.abs(frame.timeMs - analysed.tMs) > halfFrameMs) continue;
    features.set(
      k,
      analysed.detections.map((d) => (d.class === 'ball' ? null : torsoHistogram(frame, d.box, scale))),
    );
    k += 1;
    if (k % 25 === 0) options.onProgress?.(k / total);
  }
  return features;
}

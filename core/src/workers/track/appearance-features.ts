import type { DetectionsFile } from '../detect/detections-format.ts';
import { type MediaBinaries, probeVideo, readVideoFrames } from '../detect/frames/index.ts';
import { torsoHistogram } from './appearance.ts';

/** Per analysed frame (position in `detections.frames`), one feature per detection (null: none). */
export type AppearanceFeatures = Map<number, (Float32Array | null)[]>;

/**
 * Appearance features of every person box: the video decoded once at the analysis rate (ffmpeg,
 * full size: players are a few pixels wide in a panorama), `torsoHistogram` of each box. A decoded
 * frame is used only when its time is within half an analysed frame of the detections' `tMs`
 * (else that frame's boxes get no feature and are associated by motion alone).
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
  const fps = detections.header.analysisFps;
  const scale = info.width / detections.header.source.width;
  const halfFrameMs = 500 / fps;
  const total = detections.frames.length;
  for await (const frame of readVideoFrames(videoPath, {
    info,
    fps,
    signal: options.signal,
    binaries: options.binaries,
    minDecodedShare: 0,
  })) {
    const analysed = detections.frames[frame.index];
    if (!analysed) break;
    if (Math.abs(frame.timeMs - analysed.tMs) > halfFrameMs) continue;
    features.set(
      frame.index,
      analysed.detections.map((d) => (d.class === 'ball' ? null : torsoHistogram(frame, d.box, scale))),
    );
    if (frame.index % 25 === 0) options.onProgress?.(frame.index / total);
  }
  return features;
}

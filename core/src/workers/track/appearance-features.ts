import { decodeHistogram, torsoHistogram } from '../detect/appearance.ts';
import { type DetectionsFile, TORSO_APPEARANCE } from '../detect/detections-format.ts';
import { type MediaBinaries, probeVideo, readVideoFrames } from '../detect/frames/index.ts';

/** Per analysed frame (position in `detections.frames`), one feature per detection (null: none). */
export type AppearanceFeatures = Map<number, (Float32Array | null)[]>;

/**
 * The appearance features the detect stage stored with the boxes (`Detection.appearance`, measured
 * in the frame it analysed; null for a box too small to measure), or null when the file's producer
 * did not measure them (no `header.appearance` and no box with one: a file written before the field,
 * or by another producer — {@link appearanceFeatures} decodes the video instead).
 */
export function storedAppearanceFeatures(detections: DetectionsFile): AppearanceFeatures | null {
  const measured =
    detections.header.appearance === TORSO_APPEARANCE ||
    detections.frames.some((f) => f.detections.some((d) => d.appearance !== undefined));
  if (!measured) return null;
  return new Map(
    detections.frames.map((f, k) => [
      k,
      f.detections.map((d) => (d.appearance === undefined ? null : decodeHistogram(d.appearance))),
    ]),
  );
}

/**
 * Appearance features of every person box: the video decoded once at full size (players are a few
 * pixels wide in a panorama) picking the source frames the detect stage analysed (the same `select`
 * at `detections.header.analysisFps`, `analysisSelectFilter`: no resampling, only those frames are
 * converted and piped), and for each analysed frame the decoded frame nearest its `tMs` (within half
 * a source frame, else that frame's boxes get no feature and are associated by motion alone),
 * `torsoHistogram` of each person box.
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
    fps: detections.header.analysisFps,
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

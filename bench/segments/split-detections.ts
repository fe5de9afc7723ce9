import type { DetectionsFile } from '../../core/src/workers/detect/index.ts';

/** One segment's detections as its own detect run would write them: frames and times from 0. */
export interface DetectionsSegment {
  index: number;
  startS: number;
  durationS: number;
  final: boolean;
  detections: DetectionsFile;
}

/**
 * Splits a clip's detections into segments of `segmentS` seconds, each renumbered from frame 0 and
 * t = 0 (what detect writes for a segment's own video).
 */
export function splitDetections(detections: DetectionsFile, segmentS: number): DetectionsSegment[] {
  const durationS = detections.header.source.durationMs / 1000;
  const count = Math.max(1, Math.ceil(durationS / segmentS - 1e-9));
  const out: DetectionsSegment[] = [];
  for (let index = 0; index < count; index++) {
    const startMs = index * segmentS * 1000;
    const endMs = Math.min(durationS * 1000, startMs + segmentS * 1000);
    const frames = detections.frames
      .filter((f) => f.tMs >= startMs - 1e-6 && f.tMs < endMs - 1e-6)
      .map((f, k) => ({ ...f, frame: k, tMs: Math.round((f.tMs - startMs) * 1000) / 1000 }));
    out.push({
      index,
      startS: index * segmentS,
      durationS: (endMs - startMs) / 1000,
      final: index === count - 1,
      detections: {
        header: {
          ...detections.header,
          source: { ...detections.header.source, frameCount: frames.length, durationMs: endMs - startMs },
        },
        frames,
      },
    });
  }
  return out;
}

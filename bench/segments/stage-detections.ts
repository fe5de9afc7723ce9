import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MODEL_PATH, detectEnvSchema, detectOptionsFromEnv } from '../../core/src/workers/detect/handler.ts';
import { type DetectionsFile, Detector, readDetectionsFile, runDetect } from '../../core/src/workers/detect/index.ts';
import { modelCardThresholds, pitchRegionOf, type TrackOptions } from '../../core/src/workers/track/index.ts';
import type { SyntheticClip } from '../workers/synthetic-clip.ts';
import { cpuSeconds } from './cpu-time.ts';

/** The command-line options every segment bench takes (`parseArgs`): the clip, the rate, the segment lengths. */
export const SEGMENT_BENCH_OPTIONS = {
  seed: { type: 'string', default: '7' },
  duration: { type: 'string', default: '20' },
  fps: { type: 'string', default: '10' },
  'segment-s': { type: 'string', default: '2,5,10' },
} as const;

/** What detecting a clip cost, when it was not cached. */
export interface DetectCost {
  cpuSeconds: number;
  wallSeconds: number;
  frames: number;
}

/**
 * A synthetic clip's detections at `fps` analysed frames per second, made by the detector as the detect
 * stage opens it (the shipped default model, its model card's tiling and floors), cached beside the
 * clip as `detections-<fps>fps-stage.jsonl` (files without `-stage` came from a generic detector: 10 %
 * scale, 300 boxes a frame). `detect` is null when the file was cached.
 */
export async function stageDetections(
  clip: SyntheticClip,
  fps: number,
): Promise<{ path: string; detections: DetectionsFile; detect: DetectCost | null }> {
  const path = join(clip.dir, `detections-${fps}fps-stage.jsonl`);
  let detect: DetectCost | null = null;
  if (!existsSync(path)) {
    const detector = await Detector.open(await detectOptionsFromEnv(detectEnvSchema.parse({})));
    const cpu0 = cpuSeconds();
    const wall0 = performance.now();
    try {
      const summary = await runDetect({ inputPath: clip.panoramaPath, outputPath: path, detector, analysisFps: fps });
      detect = {
        cpuSeconds: cpuSeconds() - cpu0,
        wallSeconds: (performance.now() - wall0) / 1000,
        frames: summary.frames,
      };
    } finally {
      await detector.close();
    }
  }
  return { path, detections: await readDetectionsFile(path), detect };
}

/**
 * The track options of the segment benches: the stage's lost buffer (30 frames at 30 fps) and gap
 * interpolation (20 frames), the default model card's thresholds and ball floor, the clip's venue pitch.
 * Motion only (no `appearance`), as these benches have always tracked.
 */
export async function stageTrackOptions(clip: SyntheticClip, detections: DetectionsFile): Promise<TrackOptions> {
  const card = await modelCardThresholds(DEFAULT_MODEL_PATH, detections.header.model);
  return {
    lostTrackBufferAt30Fps: 30,
    interpolateGapFrames: 20,
    pitchRegion: pitchRegionOf(clip.venue, clip.width, clip.height) ?? undefined,
    ...(card ? { modelCardThresholds: { high: card.high, low: card.low } } : {}),
    ...(card?.ball !== undefined ? { ball: { minScore: card.ball } } : {}),
  };
}

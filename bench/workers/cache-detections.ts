/**
 * Detections of a synthetic clip at its source rate, cached beside the clip, so that the tracking
 * benchmarks can select analysed frames by index (what the detect stage does at a lower rate: one
 * source frame per analysed frame, no resampling) without running the detector once per rate.
 *
 *   node bench/workers/cache-detections.ts [--seed 7] [--duration 20] [--tiles auto] [--model PATH]
 *
 * Writes `.work/bench-synth-<seed>-<duration>s/detections-source-<tiles>.jsonl` and prints the
 * detector's analysed frames per second (decode + inference + NMS, wall time on this host).
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL_PATH } from '../../core/src/workers/detect/handler.ts';
import { Detector, runDetect } from '../../core/src/workers/detect/index.ts';
import { detectionsCachePath } from './cache-detections-path.ts';
import { syntheticClip } from './synthetic-clip.ts';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '7' },
    duration: { type: 'string', default: '20' },
    tiles: { type: 'string', default: 'auto' },
    model: { type: 'string' },
  },
});

const clip = await syntheticClip(Number(values.seed), Number(values.duration));
const out = detectionsCachePath(clip.dir, values.tiles!);
if (existsSync(out)) {
  console.log(JSON.stringify({ cached: out }));
} else {
  const detector = await Detector.open({
    model: { path: values.model ?? DEFAULT_MODEL_PATH },
    modelVersion: 'bench',
    classMap: { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' },
    tiling: { columns: values.tiles === 'auto' ? 'auto' : Number(values.tiles) },
  });
  try {
    let last = 0;
    const summary = await runDetect({
      inputPath: clip.panoramaPath,
      outputPath: out,
      detector,
      onProgress: (f) => {
        if (f - last >= 0.05) {
          last = f;
          console.error(`detect ${(100 * f).toFixed(0)} %`);
        }
      },
    });
    console.log(
      JSON.stringify({
        out,
        frames: summary.frames,
        framesPerSecond: summary.framesPerSecond,
        tiles: summary.header.model.tiles,
        elapsedMs: summary.elapsedMs,
      }),
    );
  } finally {
    await detector.close();
  }
}

/**
 * Detections of a synthetic clip at its source rate, cached beside the clip, so that the tracking
 * benchmarks can select analysed frames by index (what the detect stage does at a lower rate: one
 * source frame per analysed frame, no resampling) without running the detector once per rate.
 *
 *   node bench/workers/cache-detections.ts [--seed 7] [--duration 20] [--tiles auto] [--model PATH]
 *
 * The detector is opened as the detect stage opens it (`detectOptionsFromEnv`).
 * Writes `.work/bench-synth-<seed>-<duration>s/detections-source-<tiles>-stage.jsonl` and prints the
 * detector's analysed frames per second (decode + inference + NMS, wall time on this host).
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { detectEnvSchema, detectOptionsFromEnv } from '../../core/src/workers/detect/handler.ts';
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
  // Opened as the detect stage opens it (its variables' defaults: the default model's 20 px training
  // scale and model card floors), with the tiling asked for.
  const detector = await Detector.open(
    await detectOptionsFromEnv(
      detectEnvSchema.parse({
        DETECT_TILING: values.tiles === 'auto' ? 'auto' : `${values.tiles}x1`,
        ...(values.model ? { DETECT_MODEL_PATH: values.model } : {}),
      }),
    ),
  );
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

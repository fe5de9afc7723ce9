/**
 * Speed of the analysis stages on this host, and the detector's overhead
 * over a bare onnxruntime loop.
 *
 *   node bench/workers/stages.ts [--video ../shared/footage/walking.mp4] [--model ../shared/models/yolox_nano.onnx]
 *                                [--class-map 0:player,32:ball] [--frames 120] [--rounds 3]
 *
 * - detect: whole-clip `runDetect` (decode + letterbox + inference + NMS + JSONL);
 *   and, on frames decoded into memory beforehand, the detector
 *   (letterbox → session.run → decode → NMS, sequential: the worst case,
 *   since `runDetect` overlaps letterboxing with inference) against a bare
 *   `session.run` on the same prepared tensors (same model, same batch),
 *   paired batch by batch so both see the same load, `--rounds` passes;
 * - track, vcam (1920×1080 render), analyze, encode (HLS 1080/720/480):
 *   frames per second on the same clip;
 * - the real-time factor of a 90-minute match at 25 fps (135 000 frames):
 *   detect → track → max(vcam, analyze) → encode, one worker per stage.
 * Writes bench/results/workers-stages.json.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runAnalyze } from '../../core/src/workers/analyze/index.ts';
import {
  type DetectionClass,
  Detector,
  probeVideo,
  type RawFrame,
  readDetectionsFile,
  readVideoFrames,
  runDetect,
} from '../../core/src/workers/detect/index.ts';
import { encodeHls } from '../../core/src/workers/encode/index.ts';
import { trackDetections } from '../../core/src/workers/track/index.ts';
import { planCameraPath, renderVirtualCamera } from '../../core/src/workers/vcam/index.ts';

const { values } = parseArgs({
  options: {
    video: { type: 'string', default: '../shared/footage/walking.mp4' },
    model: { type: 'string', default: '../shared/models/yolox_nano.onnx' },
    'class-map': { type: 'string', default: '0:player,32:ball' },
    frames: { type: 'string', default: '120' },
    rounds: { type: 'string', default: '3' },
  },
});
const classMap = Object.fromEntries(
  values['class-map'].split(',').map((p) => {
    const [id, name] = p.split(':');
    return [Number(id), name as DetectionClass];
  }),
);
const MATCH_FRAMES = 90 * 60 * 25;
const work = await mkdtemp(join(tmpdir(), 'pv-bench-stages-'));
const log = (...args: unknown[]) => console.error('[bench]', ...args);
try {
  const detector = await Detector.open({ model: { path: values.model }, modelVersion: 'bench', classMap });
  const info = await probeVideo(values.video);
  const plan = detector.plan(info.width, info.height);

  // 1. Detector pipeline vs bare session.run, same frames in memory, interleaved.
  const frames: RawFrame[] = [];
  for await (const f of readVideoFrames(values.video, { info, width: plan.decodeWidth, height: plan.decodeHeight })) {
    frames.push(f);
    if (frames.length >= Number(values.frames)) break;
  }
  const perBatch = detector.framesPerBatch(plan);
  const chunks: RawFrame[][] = [];
  for (let i = 0; i < frames.length; i += perBatch) chunks.push(frames.slice(i, i + perBatch));
  const prepared = chunks.map((c) => detector.prepare(c, plan));
  // Paired per batch (bare run, then the full prepare → infer → decode → NMS of the same frames), so that
  // both see the same momentary load of a shared host; summed over `--rounds` passes.
  await detector.runRaw(prepared[0]![0]!.tensor); // warm-up
  let bareMs = 0;
  let pipelineMs = 0;
  const ratios: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    for (const [i, chunk] of chunks.entries()) {
      let t = performance.now();
      for (const b of prepared[i]!) await detector.runRaw(b.tensor);
      const bare = performance.now() - t;
      t = performance.now();
      await detector.infer(detector.prepare(chunk, plan));
      const full = performance.now() - t;
      bareMs += bare;
      pipelineMs += full;
      ratios.push(full / bare);
    }
    log(`round ${r + 1}: detector ${pipelineMs.toFixed(0)} ms, bare ${bareMs.toFixed(0)} ms so far`);
  }
  ratios.sort((a, b) => a - b);
  const overhead = {
    frames: frames.length * Number(values.rounds),
    batchSize: detector.info.batchSize,
    tiles: plan.tiles.length,
    detectorFps: (frames.length * Number(values.rounds)) / (pipelineMs / 1000),
    bareFps: (frames.length * Number(values.rounds)) / (bareMs / 1000),
    overheadShare: pipelineMs / bareMs - 1,
    medianPairedOverheadShare: ratios[Math.floor(ratios.length / 2)]! - 1,
  };

  // 2. Whole stages on the clip.
  const detectionsPath = join(work, 'detections.jsonl');
  const detect = await runDetect({ inputPath: values.video, outputPath: detectionsPath, detector });
  log(`detect: ${detect.framesPerSecond.toFixed(1)} fps`);
  await detector.close();
  const detections = await readDetectionsFile(detectionsPath);
  let t0 = performance.now();
  const tracks = trackDetections(detections);
  const trackFps = detections.frames.length / ((performance.now() - t0) / 1000);
  log(`track: ${trackFps.toFixed(0)} fps`);
  const vcam = await renderVirtualCamera({
    inputPath: values.video,
    outputPath: join(work, 'vcam.mp4'),
    path: planCameraPath(tracks),
  });
  log(`vcam: ${vcam.framesPerSecond.toFixed(1)} fps (${vcam.encoder})`);
  t0 = performance.now();
  await runAnalyze({ tracks, videoPath: values.video, outputDir: join(work, 'analytics') });
  const analyzeFps = info.frameCount / ((performance.now() - t0) / 1000);
  log(`analyze: ${analyzeFps.toFixed(1)} fps`);
  const encode = await encodeHls({ inputPath: join(work, 'vcam.mp4'), outputDir: join(work, 'hls') });
  log(`encode: ${encode.framesPerSecond.toFixed(1)} fps (${encode.encoder})`);

  const minutes = (fps: number) => MATCH_FRAMES / fps / 60;
  const stages = {
    detect: { fps: detect.framesPerSecond, executionProvider: detect.header.model.executionProvider },
    track: { fps: trackFps },
    vcam: { fps: vcam.framesPerSecond, encoder: vcam.encoder, output: '1920x1080' },
    analyze: { fps: analyzeFps },
    encode: { fps: encode.framesPerSecond, encoder: encode.encoder, renditions: encode.renditions.map((r) => r.name) },
  };
  const match = {
    frames: MATCH_FRAMES,
    detectMin: minutes(stages.detect.fps),
    trackMin: minutes(stages.track.fps),
    vcamMin: minutes(stages.vcam.fps),
    analyzeMin: minutes(stages.analyze.fps),
    encodeMin: minutes(stages.encode.fps),
  };
  const totalMin = match.detectMin + match.trackMin + Math.max(match.vcamMin, match.analyzeMin) + match.encodeMin;
  const results = {
    date: new Date().toISOString(),
    host: { cpus: cpus().length, model: cpus()[0]?.model },
    video: { path: values.video, width: info.width, height: info.height, fps: info.fps, frames: info.frameCount },
    model: {
      path: values.model,
      layout: detector.info.layout,
      input: `${detector.info.inputWidth}x${detector.info.inputHeight}`,
    },
    detectorOverhead: overhead,
    stages,
    match90: { ...match, totalMin, realTimeFactor: totalMin / 90, seedTargetMin: 32 },
  };
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/workers-stages.json', `${JSON.stringify(results, null, 2)}\n`);
  console.log(JSON.stringify(results, null, 2));
} finally {
  await rm(work, { recursive: true, force: true });
}

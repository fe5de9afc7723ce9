/**
 * Detect + track on real footage without ground truth: how many people the tracks hold per frame
 * against what the detector sees.
 *
 *   node bench/workers/track-real.ts [--rate 10] [--model ../shared/models/yolox_nano.onnx]
 *       [--class-map 0:player,32:ball] [--clips tsukuba-left.mp4:3x2,walking.mp4:1]
 *
 * Per clip (`name:columns[xrows]` of tiles, from ../shared/footage): the detect stage's library at `--rate`
 * analysed frames per second, then the track stage's `trackClip` with its defaults (thresholds
 * calibrated on the clip: no model card for this model; no venue calibration, so no pitch region)
 * and, as the baseline in the same run, ByteTrack's fixed 0.5 / 0.6 thresholds. Reports person
 * detections per frame (all, and at or above the calibrated high threshold), tracked boxes per
 * frame (observed, not interpolated), the share of confident detections that end in a track, and
 * track counts. Writes bench/results/track-real.json. Skips a clip whose file is missing.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type DetectionClass,
  type DetectionsFile,
  Detector,
  iou,
  readDetectionsFile,
  runDetect,
} from '../../core/src/workers/detect/index.ts';
import { type TrackedClip, trackClip } from '../../core/src/workers/track/index.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '10' },
    model: { type: 'string', default: '../shared/models/yolox_nano.onnx' },
    'class-map': { type: 'string', default: '0:player,32:ball' },
    clips: { type: 'string', default: 'tsukuba-left.mp4:3x2,walking.mp4:1' },
  },
});
const rate = Number(values.rate);
const classMap = Object.fromEntries(
  values['class-map']!.split(',').map((p) => {
    const [id, name] = p.split(':');
    return [Number(id), name as DetectionClass];
  }),
);
const PEOPLE = new Set(['player', 'goalkeeper', 'referee']);

function measure(detections: DetectionsFile, result: TrackedClip, confidentAt: number) {
  let all = 0;
  let confident = 0;
  let confidentInTrack = 0;
  let trackedBoxes = 0;
  const people = result.tracks.tracks.filter((t) => PEOPLE.has(t.class));
  detections.frames.forEach((f, k) => {
    const boxes = people.flatMap((t) => t.frames.filter((x) => x.frame === k && !x.interpolated).map((x) => x.box));
    trackedBoxes += boxes.length;
    for (const d of f.detections) {
      if (!PEOPLE.has(d.class)) continue;
      all += 1;
      if (d.score < confidentAt) continue;
      confident += 1;
      if (boxes.some((b) => iou(b, d.box) >= 0.9)) confidentInTrack += 1;
    }
  });
  const n = detections.frames.length;
  return {
    tracks: people.length,
    personDetectionsPerFrame: +(all / n).toFixed(2),
    confidentDetectionsPerFrame: +(confident / n).toFixed(2),
    trackedBoxesPerFrame: +(trackedBoxes / n).toFixed(2),
    confidentInTrackShare: confident > 0 ? +(confidentInTrack / confident).toFixed(3) : null,
    thresholds: result.thresholds,
  };
}

const rows = [];
for (const spec of values.clips!.split(',')) {
  const [name, tiles] = spec.split(':') as [string, string];
  const path = join('..', 'shared', 'footage', name);
  if (!existsSync(path)) {
    console.error(`skip ${name}: ${path} is missing`);
    continue;
  }
  const clipDetector = await Detector.open({
    model: { path: values.model! },
    modelVersion: 'bench',
    classMap,
    scoreThreshold: 0.1,
    tiling: { columns: Number(tiles.split('x')[0]), rows: Number(tiles.split('x')[1] ?? 1) },
  });
  // Detections are cached per clip, rate, model and tiles (re-running the tracker costs no detection).
  const cached = join('.work', 'bench-real', `${name}-${rate}fps-${tiles}-${values.model!.split('/').at(-1)}.jsonl`);
  let detectorFps: number | null = null;
  if (!existsSync(cached)) {
    await mkdir(join('.work', 'bench-real'), { recursive: true });
    try {
      const summary = await runDetect({
        inputPath: path,
        outputPath: cached,
        detector: clipDetector,
        analysisFps: rate,
        failOnZeroDetections: false,
      });
      detectorFps = +summary.framesPerSecond.toFixed(2);
    } finally {
      await clipDetector.close();
    }
  } else await clipDetector.close();
  const detections = await readDetectionsFile(cached);
  const ours = trackClip(detections, { lostTrackBufferAt30Fps: 30, interpolateGapFrames: 20 });
  const fixed = trackClip(detections, {
    lostTrackBufferAt30Fps: 30,
    interpolateGapFrames: 20,
    highScoreThreshold: 0.5,
    lowScoreThreshold: 0.1,
    newTrackThreshold: 0.6,
    fuseScore: true,
  });
  const row = {
    clip: name,
    width: detections.header.source.width,
    height: detections.header.source.height,
    analysedFrames: detections.frames.length,
    tiles: detections.header.model.tiles,
    detectorFps,
    calibrated: measure(detections, ours, ours.thresholds.high),
    baselineFixedThresholds: measure(detections, fixed, ours.thresholds.high),
    ball: ours.ballTrack.summary,
  };
  console.error(JSON.stringify(row));
  rows.push(row);
}
const results = {
  date: new Date().toISOString(),
  command: `node bench/workers/track-real.ts --rate ${values.rate} --model ${values.model} --class-map ${values['class-map']} --clips ${values.clips}`,
  rows,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/track-real.json', `${JSON.stringify(results, null, 2)}\n`);
console.log(JSON.stringify(results, null, 2));

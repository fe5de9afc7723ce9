/**
 * The detect stage on real, unlabelled footage: boxes per frame, the tiling it chose, and whether
 * it warns that the model looks wrong — the legacy scoring and the model card's side by side, in one
 * run (`bench/detect/scoring.ts`).
 *
 *   node bench/detect/real-footage.ts [--clip ../shared/footage/tsukuba-left.mp4] [--fps 5] [--scorings legacy,card]
 *
 * Runs `runDetect` (as the stage: first pass, tiling, decode, NMS, warnings) with the default model
 * and prints, per scoring: tiles, estimated person height, boxes per frame (people / ball), people
 * per frame at the tracker's `high`, warnings, analysed frames per second and the load average.
 * Writes bench/results/detect-real-footage-<clip>.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL_PATH, DEFAULT_MODEL_PERSON_HEIGHT_PX } from '../../core/src/workers/detect/handler.ts';
import { Detector, readDetectionsFile, runDetect } from '../../core/src/workers/detect/index.ts';
import { type Scoring, scoringOptions } from './scoring.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: {
    clip: { type: 'string', default: join(root, '..', 'shared', 'footage', 'tsukuba-left.mp4') },
    fps: { type: 'string', default: '5' },
    scorings: { type: 'string', default: 'legacy,card' },
  },
});
const clip = values.clip;
const work = join(root, '.cache', 'bench-detect');
await mkdir(work, { recursive: true });
const rows = [];
for (const scoring of values.scorings.split(',') as Scoring[]) {
  const { options, high } = await scoringOptions(scoring, DEFAULT_MODEL_PATH);
  const detector = await Detector.open({
    model: { path: DEFAULT_MODEL_PATH },
    modelVersion: `bench-${scoring}`,
    classMap: { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' },
    tiling: { modelPersonHeightPx: DEFAULT_MODEL_PERSON_HEIGHT_PX },
    ...options,
  });
  const outputPath = join(work, `real-footage-${basename(clip, '.mp4')}-${scoring}.jsonl`);
  const loadBefore = loadavg()[0]!;
  try {
    const summary = await runDetect({ inputPath: clip, outputPath, detector, analysisFps: Number(values.fps) });
    const file = await readDetectionsFile(outputPath);
    const frames = file.frames.length;
    const count = (keep: (d: { class: string; score: number }) => boolean) =>
      file.frames.reduce((n, f) => n + f.detections.filter(keep).length, 0) / frames;
    const row = {
      scoring,
      frames,
      tiles: `${summary.header.tiling?.columns}x${summary.header.tiling?.rows}`,
      personHeightPx: summary.header.tiling?.personHeightPx,
      boxesPerFrame: summary.detections / frames,
      peoplePerFrame: count((d) => d.class !== 'ball'),
      ballPerFrame: count((d) => d.class === 'ball'),
      trackerHigh: high,
      confidentPeoplePerFrame: high === undefined ? undefined : count((d) => d.class !== 'ball' && d.score >= high),
      lowScoreShare:
        file.frames.reduce((n, f) => n + f.detections.filter((d) => d.score < 0.3).length, 0) /
        Math.max(1, summary.detections),
      warnings: summary.warnings,
      framesPerSecond: summary.framesPerSecond,
      loadAverage1m: (loadBefore + loadavg()[0]!) / 2,
    };
    rows.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  } finally {
    await detector.close();
  }
}
const result = {
  command: `node bench/detect/real-footage.ts ${process.argv.slice(2).join(' ')}`.trim(),
  clip: clip.replace(join(root, '..'), '../'),
  analysisFps: Number(values.fps),
  model: 'core/models/player-detector/player-detector.onnx',
  cpuCores: cpus().length,
  rows,
  measuredAt: new Date().toISOString(),
};
await writeFile(
  join(root, 'bench', 'results', `detect-real-footage-${basename(clip, '.mp4')}.json`),
  `${JSON.stringify(result, null, 2)}\n`,
);

/**
 * Detection scoring against tracking on the synthetic demo clip, as `pnpm demo` runs it: the demo's
 * sample (seed 7, 20 s, 3 cameras → 2880×392 panorama, `bench/workers/synthetic-clip.ts`), the detect
 * stage at the demo's 10 analysed frames per second with the default model and `auto` tiling, then
 * the track stage's code as its handler calls it (model-card thresholds, the card's ball floor, the
 * venue's pitch region, other options at their defaults), scored by `polyvision eval detections`
 * and `polyvision eval tracks` against the clip's ground truth. Legacy and card scoring
 * (`bench/detect/scoring.ts`) side by side, in one run; the legacy row uses the 2.0 card's tracker
 * thresholds (0.531 / 0.349 on the best-role score), the card row the card's (merged score).
 *
 *   node bench/detect/synthetic-demo.ts [--scorings legacy,card] [--fps 10]
 *
 * Writes bench/results/detect-synthetic-demo.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { DEFAULT_MODEL_PATH, DEFAULT_MODEL_PERSON_HEIGHT_PX } from '../../core/src/workers/detect/handler.ts';
import { Detector, readDetectionsFile, readModelCard, runDetect } from '../../core/src/workers/detect/index.ts';
import { pitchRegionOf, trackClip, writeTracksFile } from '../../core/src/workers/track/index.ts';
import { syntheticClip } from '../workers/synthetic-clip.ts';
import { type Scoring, scoringOptions } from './scoring.ts';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: { scorings: { type: 'string', default: 'legacy,card' }, fps: { type: 'string', default: '10' } },
});
const clip = await syntheticClip(7, 20);
const gt = resolve(clip.dir, 'gt', 'panorama.mot.txt');
const work = join(root, '.cache', 'bench-detect', 'synthetic-demo');
await mkdir(work, { recursive: true });
const cli = (args: string[]) => exec(process.execPath, [join(root, 'deploy/src/cli/main.ts'), ...args]);
const card = await readModelCard(DEFAULT_MODEL_PATH);
const rows = [];
for (const scoring of values.scorings.split(',') as Scoring[]) {
  const { options, high } = await scoringOptions(scoring, DEFAULT_MODEL_PATH);
  const thresholds =
    scoring === 'legacy' ? { high: 0.531, low: 0.349, ball: 0.18 } : card ? card.tracker : { high: 0.5, low: 0.1 };
  const detector = await Detector.open({
    model: { path: DEFAULT_MODEL_PATH },
    modelVersion: `bench-${scoring}`,
    classMap: { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' },
    tiling: { modelPersonHeightPx: DEFAULT_MODEL_PERSON_HEIGHT_PX },
    ...options,
  });
  const detectionsPath = join(work, `${scoring}.detections.jsonl`);
  const tracksPath = join(work, `${scoring}.tracks.json`);
  const loadBefore = loadavg()[0]!;
  let summary: Awaited<ReturnType<typeof runDetect>>;
  try {
    summary = await runDetect({
      inputPath: clip.panoramaPath,
      outputPath: detectionsPath,
      detector,
      analysisFps: Number(values.fps),
    });
  } finally {
    await detector.close();
  }
  const detections = await readDetectionsFile(detectionsPath);
  const region = pitchRegionOf(clip.venue, clip.width, clip.height);
  const tracked = trackClip(detections, {
    modelCardThresholds: { high: thresholds.high, low: thresholds.low },
    ...(thresholds.ball !== undefined ? { ball: { minScore: thresholds.ball } } : {}),
    ...(region ? { pitchRegion: region } : {}),
  });
  await writeTracksFile(tracksPath, tracked.tracks);
  const evalTracks = JSON.parse((await cli(['eval', 'tracks', '--gt', gt, '--pred', tracksPath, '--json'])).stdout);
  const evalDetections = JSON.parse(
    (
      await cli([
        'eval',
        'detections',
        '--gt',
        gt,
        '--pred',
        detectionsPath,
        '--min-score',
        String(high ?? 0.3),
        '--json',
      ])
    ).stdout,
  );
  const row = {
    scoring,
    trackerThresholds: thresholds,
    tiles: `${summary.header.tiling?.columns}x${summary.header.tiling?.rows}`,
    personHeightPx: summary.header.tiling?.personHeightPx,
    frames: summary.frames,
    boxesPerFrame: summary.detections / summary.frames,
    warnings: summary.warnings,
    detectionsAtHigh: evalDetections,
    tracks: evalTracks,
    detectFramesPerSecond: summary.framesPerSecond,
    loadAverage1m: (loadBefore + loadavg()[0]!) / 2,
  };
  rows.push(row);
  process.stdout.write(
    `${scoring}: tiles ${row.tiles}, ${row.boxesPerFrame.toFixed(1)} boxes/frame, warnings ${row.warnings.length}; tracks ${JSON.stringify(evalTracks).slice(0, 400)}\n`,
  );
}
await writeFile(
  join(root, 'bench', 'results', 'detect-synthetic-demo.json'),
  `${JSON.stringify({ command: `node bench/detect/synthetic-demo.ts ${process.argv.slice(2).join(' ')}`.trim(), cpuCores: cpus().length, rows, measuredAt: new Date().toISOString() }, null, 2)}\n`,
);

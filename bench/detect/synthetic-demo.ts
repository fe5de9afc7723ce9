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
 *   node bench/detect/synthetic-demo.ts [--scorings legacy,card] [--fps 10] [--reuse] [--seed 7] [--ball-floor x]
 *
 * `--reuse` keeps detections written by an earlier run (tracking and scoring only); `--high`/`--low`
 * replace the tracker thresholds, `--ball-floor` the ball score the detector keeps and the ball
 * tracker considers, `--seed` the sample (exploration; `--out` names the results file). The ball: the
 * ball track's positions and the single-frame top-score ball box against the truth centre (within
 * 5 px), per analysed frame, as bench/workers/track-quality.ts.
 *
 * Writes bench/results/detect-synthetic-demo.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { DEFAULT_MODEL_PATH } from '../../core/src/workers/detect/handler.ts';
import { readDetectionsFile, readModelCard } from '../../core/src/workers/detect/index.ts';
import { pitchRegionOf, trackClip, writeTracksFile } from '../../core/src/workers/track/index.ts';
import { type Scoring, scoringOptions } from './scoring.ts';
import { ballTruth, scoreBallTrack, syntheticDetections } from './synthetic-detections.ts';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: {
    scorings: { type: 'string', default: 'legacy,card' },
    fps: { type: 'string', default: '10' },
    reuse: { type: 'boolean', default: false },
    high: { type: 'string' },
    low: { type: 'string' },
    'ball-floor': { type: 'string' },
    seed: { type: 'string', default: '7' },
    out: { type: 'string', default: 'detect-synthetic-demo' },
  },
});
const work = join(root, '.cache', 'bench-detect', 'synthetic-demo');
await mkdir(work, { recursive: true });
const cli = (args: string[]) => exec(process.execPath, [join(root, 'deploy/src/cli/main.ts'), ...args]);
const card = await readModelCard(DEFAULT_MODEL_PATH);
const rows = [];
for (const scoring of values.scorings.split(',') as Scoring[]) {
  const { high } = await scoringOptions(scoring, DEFAULT_MODEL_PATH);
  const base =
    scoring === 'legacy' ? { high: 0.531, low: 0.349, ball: 0.18 } : card ? card.tracker : { high: 0.5, low: 0.1 };
  // --high / --low: explore other tracker thresholds on the same detections (with --reuse).
  const thresholds = {
    ...base,
    ...(values.high ? { high: Number(values.high) } : {}),
    ...(values.low ? { low: Number(values.low) } : {}),
    ...(values['ball-floor'] ? { ball: Number(values['ball-floor']) } : {}),
  };
  const loadBefore = loadavg()[0]!;
  const { clip, detectionsPath, variant, framesPerSecond } = await syntheticDetections({
    seed: Number(values.seed),
    scoring,
    fps: Number(values.fps),
    reuse: values.reuse,
    ...(values['ball-floor'] ? { ballFloor: Number(values['ball-floor']) } : {}),
  });
  const detectFramesPerSecond = framesPerSecond;
  const gt = resolve(clip.dir, 'gt', 'panorama.mot.txt');
  const tracksPath = join(work, `${variant}.tracks.json`);
  const detections = await readDetectionsFile(detectionsPath);
  const detectionCount = detections.frames.reduce((n, f) => n + f.detections.length, 0);
  const region = pitchRegionOf(clip.venue, clip.width, clip.height);
  const tracked = trackClip(detections, {
    modelCardThresholds: { high: thresholds.high, low: thresholds.low },
    ...(thresholds.ball !== undefined ? { ball: { minScore: thresholds.ball } } : {}),
    ...(region ? { pitchRegion: region } : {}),
  });
  await writeTracksFile(tracksPath, tracked.tracks);
  // Ball: the track's positions and the top-score box per analysed frame against the truth centre.
  const truth = ballTruth(clip, detections);
  const near = (k: number, x: number, y: number) => truth.near(k, x, y);
  const ballTruthFrames = truth.frames;
  const trackScore = scoreBallTrack(truth, tracked.ballTrack.frames);
  const single = { frames: 0, right: 0, boxes: 0 };
  detections.frames.forEach((f, k) => {
    const balls = f.detections.filter((d) => d.class === 'ball').sort((a, b) => b.score - a.score);
    single.boxes += balls.length;
    if (balls.length === 0) return;
    single.frames += 1;
    const top = balls[0]!;
    if (near(k, (top.box[0] + top.box[2]) / 2, (top.box[1] + top.box[3]) / 2)) single.right += 1;
  });
  const ratio = (a: number, b: number) => (b > 0 ? +(a / b).toFixed(3) : 0);
  const ball = {
    truthFrames: ballTruthFrames,
    boxesPerFrame: +(single.boxes / detections.frames.length).toFixed(2),
    track: { precision: trackScore.precision, recall: trackScore.recall },
    singleFrameTopScore: {
      precision: ratio(single.right, single.frames),
      recall: ratio(single.right, ballTruthFrames),
    },
  };
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
    tiles: `${detections.header.tiling?.columns}x${detections.header.tiling?.rows}`,
    personHeightPx: detections.header.tiling?.personHeightPx,
    frames: detections.frames.length,
    boxesPerFrame: detectionCount / detections.frames.length,
    warnings: detections.header.warnings ?? [],
    detectionsAtHigh: evalDetections,
    tracks: evalTracks,
    ball,
    detectFramesPerSecond,
    loadAverage1m: (loadBefore + loadavg()[0]!) / 2,
  };
  rows.push(row);
  process.stdout.write(
    `${scoring}: tiles ${row.tiles}, ${row.boxesPerFrame.toFixed(1)} boxes/frame, warnings ${row.warnings.length}; tracks ${JSON.stringify(evalTracks).slice(0, 400)}; ball ${JSON.stringify(ball)}\n`,
  );
}
await writeFile(
  join(root, 'bench', 'results', `${values.out}.json`),
  `${JSON.stringify({ command: `node bench/detect/synthetic-demo.ts ${process.argv.slice(2).join(' ')}`.trim(), cpuCores: cpus().length, rows, measuredAt: new Date().toISOString() }, null, 2)}\n`,
);

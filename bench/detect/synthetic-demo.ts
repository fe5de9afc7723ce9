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
import { existsSync } from 'node:fs';
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
const clip = await syntheticClip(Number(values.seed), 20);
const gt = resolve(clip.dir, 'gt', 'panorama.mot.txt');
const work = join(root, '.cache', 'bench-detect', 'synthetic-demo');
await mkdir(work, { recursive: true });
const cli = (args: string[]) => exec(process.execPath, [join(root, 'deploy/src/cli/main.ts'), ...args]);
const card = await readModelCard(DEFAULT_MODEL_PATH);
const rows = [];
for (const scoring of values.scorings.split(',') as Scoring[]) {
  const { options, high } = await scoringOptions(scoring, DEFAULT_MODEL_PATH);
  const base =
    scoring === 'legacy' ? { high: 0.531, low: 0.349, ball: 0.18 } : card ? card.tracker : { high: 0.5, low: 0.1 };
  // --high / --low: explore other tracker thresholds on the same detections (with --reuse).
  const thresholds = {
    ...base,
    ...(values.high ? { high: Number(values.high) } : {}),
    ...(values.low ? { low: Number(values.low) } : {}),
    ...(values['ball-floor'] ? { ball: Number(values['ball-floor']) } : {}),
  };
  const detector = await Detector.open({
    model: { path: DEFAULT_MODEL_PATH },
    modelVersion: `bench-${scoring}`,
    classMap: { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' },
    tiling: { modelPersonHeightPx: DEFAULT_MODEL_PERSON_HEIGHT_PX },
    ...options,
    // --ball-floor: the lowest ball score the detector keeps and the ball tracker considers (exploration).
    ...(values['ball-floor']
      ? { classScoreFloors: { ...options.classScoreFloors, ball: Number(values['ball-floor']) } }
      : {}),
  });
  const variant = `${scoring}-seed${values.seed}${values['ball-floor'] ? `-ball${values['ball-floor']}` : ''}`;
  const detectionsPath = join(work, `${variant}.detections.jsonl`);
  const tracksPath = join(work, `${variant}.tracks.json`);
  const loadBefore = loadavg()[0]!;
  let detectFramesPerSecond: number | undefined;
  try {
    if (!values.reuse || !existsSync(detectionsPath)) {
      const summary = await runDetect({
        inputPath: clip.panoramaPath,
        outputPath: detectionsPath,
        detector,
        analysisFps: Number(values.fps),
      });
      detectFramesPerSecond = summary.framesPerSecond;
    }
  } finally {
    await detector.close();
  }
  const detections = await readDetectionsFile(detectionsPath);
  const detectionCount = detections.frames.reduce((n, f) => n + f.detections.length, 0);
  const region = pitchRegionOf(clip.venue, clip.width, clip.height);
  const tracked = trackClip(detections, {
    modelCardThresholds: { high: thresholds.high, low: thresholds.low },
    ...(thresholds.ball !== undefined ? { ball: { minScore: thresholds.ball } } : {}),
    ...(region ? { pitchRegion: region } : {}),
  });
  await writeTracksFile(tracksPath, tracked.tracks);
  // Ball: truth centre per source frame; the track and the top-score box per analysed frame.
  const truthBall = new Map(
    clip.truth.tracks.find((t) => t.class === 'ball')?.frames.map((f) => [f.frame, f.box] as const) ?? [],
  );
  const near = (k: number, x: number, y: number) => {
    const b = truthBall.get(detections.frames[k]?.sourceFrame ?? -1);
    return b !== undefined && Math.hypot((b[0] + b[2]) / 2 - x, (b[1] + b[3]) / 2 - y) <= 5;
  };
  const ballTruthFrames = detections.frames.filter((f) => truthBall.has(f.sourceFrame ?? -1)).length;
  const trackBall = { positions: 0, right: 0 };
  for (const f of tracked.ballTrack.frames) {
    if (f.x === null || f.y === null || f.state === 'predicted') continue;
    trackBall.positions += 1;
    if (near(f.frame, f.x, f.y)) trackBall.right += 1;
  }
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
    track: { precision: ratio(trackBall.right, trackBall.positions), recall: ratio(trackBall.right, ballTruthFrames) },
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

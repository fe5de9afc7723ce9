/**
 * The ball track's candidate floor (the model card's `tracker.ball`) against the single-frame
 * best-F1 score it replaced (`tracker.ball_best_f1`), on synthetic samples as `pnpm demo` makes them:
 * the default detector run once per seed with a low ball floor (0.05), then the track stage's code on
 * those detections at each floor — the same candidates the stage would see at that floor, since the
 * ball tracker's first step drops everything below it. Ball track precision / recall within 5 px per
 * seed, and pooled over the held-out seeds (every seed but the demo's 7). `--verifier off`: the detector's
 * own ball scores (`DETECT_VERIFIER=off`) and the card's floors for them (`verifier.tracker_unverified`).
 *
 *   node bench/detect/ball-track-floor.ts [--seeds 7,11,12,13,14,15] [--floors 0.406,0.252] [--reuse] [--verifier off]
 *
 * Writes bench/results/detect-ball-track-floor.json (`-unverified.json` with `--verifier off`).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL_PATH } from '../../core/src/workers/detect/handler.ts';
import { readDetectionsFile, readModelCard } from '../../core/src/workers/detect/index.ts';
import { cardThresholds } from '../../core/src/workers/detect/model/model-card.ts';
import { pitchRegionOf, trackClip } from '../../core/src/workers/track/index.ts';
import { ballTruth, scoreBallTrack, syntheticDetections } from './synthetic-detections.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const DEMO_SEED = 7;
const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '7,11,12,13,14,15' },
    floors: { type: 'string' },
    reuse: { type: 'boolean', default: false },
    verifier: { type: 'string', default: 'auto' },
  },
});
const verifier = values.verifier === 'off' ? 'off' : 'auto';
const card = await readModelCard(DEFAULT_MODEL_PATH);
const tracker = card && cardThresholds(card, verifier);
if (!tracker?.ball) throw new Error(`no model card with a ball floor beside ${DEFAULT_MODEL_PATH}`);
const cardJson = JSON.parse(await readFile(join(dirname(DEFAULT_MODEL_PATH), 'metrics.json'), 'utf8'));
const bestF1 = verifier === 'auto' ? (cardJson.tracker?.ball_best_f1 as number | undefined) : undefined;
const floors = values.floors ? values.floors.split(',').map(Number) : [...(bestF1 ? [bestF1] : []), tracker.ball];
const rows: { seed: number; floor: number; positions: number; right: number; precision: number; recall: number }[] = [];
const truthFrames = new Map<number, number>();
for (const seed of values.seeds.split(',').map(Number)) {
  const { clip, detectionsPath } = await syntheticDetections({
    seed,
    scoring: 'card',
    fps: 10,
    ballFloor: 0.05,
    reuse: values.reuse,
    verifier,
  });
  const detections = await readDetectionsFile(detectionsPath);
  const truth = ballTruth(clip, detections);
  truthFrames.set(seed, truth.frames);
  const region = pitchRegionOf(clip.venue, clip.width, clip.height);
  for (const floor of floors) {
    const tracked = trackClip(detections, {
      modelCardThresholds: { high: tracker.high, low: tracker.low },
      ball: { minScore: floor },
      ...(region ? { pitchRegion: region } : {}),
    });
    const score = scoreBallTrack(truth, tracked.ballTrack.frames);
    rows.push({ seed, floor, ...score });
    process.stdout.write(`seed ${seed} floor ${floor}: ball track P ${score.precision} R ${score.recall}\n`);
  }
}
const pooled = floors.map((floor) => {
  const held = rows.filter((r) => r.floor === floor && r.seed !== DEMO_SEED);
  const positions = held.reduce((n, r) => n + r.positions, 0);
  const right = held.reduce((n, r) => n + r.right, 0);
  const frames = held.reduce((n, r) => n + (truthFrames.get(r.seed) ?? 0), 0);
  const result = {
    floor,
    seeds: held.map((r) => r.seed),
    precision: positions > 0 ? +(right / positions).toFixed(3) : 0,
    recall: frames > 0 ? +(right / frames).toFixed(3) : 0,
  };
  process.stdout.write(`held-out seeds, floor ${floor}: ball track P ${result.precision} R ${result.recall}\n`);
  return result;
});
await writeFile(
  join(root, 'bench', 'results', `detect-ball-track-floor${verifier === 'off' ? '-unverified' : ''}.json`),
  `${JSON.stringify(
    {
      command: `node bench/detect/ball-track-floor.ts ${process.argv.slice(2).join(' ')}`.trim(),
      card: { ball: tracker.ball, ball_best_f1: bestF1, verifier },
      rows,
      heldOutPooled: pooled,
      cpuCores: cpus().length,
      loadAverage1m: loadavg()[0],
      measuredAt: new Date().toISOString(),
    },
    null,
    2,
  )}\n`,
);

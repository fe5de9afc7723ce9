/**
 * The ball track on real footage against ball positions labelled by eye
 * (`bench/label/tsukuba-left/ball.json`: source frame → centre, or not in the picture), read from a
 * `pnpm demo` run on that camera (`./polyvision demo --plain --cameras ../shared/footage/tsukuba-left.mp4`):
 * each segment's `track/segment-N/ball-track.json`, its analysed frames mapped to the camera's source frames
 * through `detect/segment-N/detections.jsonl` (segments follow one another in the source). Precision = the
 * track's `detected` and `interpolated` positions within `--radius` px of the ball over all its positions at
 * labelled frames (a position where the ball is not in the picture is false); recall = the right ones over the
 * labelled frames with the ball. The detector's best ball box per frame (at the card's floor) beside it.
 *
 *   node bench/detect/real-ball-track.ts --match out/<match> [--labels bench/label/tsukuba-left/ball.json] [--radius 10]
 *
 * Writes bench/results/detect-real-ball-track.json.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readDetectionsFile } from '../../core/src/workers/detect/index.ts';
import { BallTrackFileSchema } from '../../core/src/workers/track/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: {
    match: { type: 'string' },
    labels: { type: 'string', default: join(root, 'bench/label/tsukuba-left/ball.json') },
    radius: { type: 'string', default: '10' },
  },
});
if (!values.match) throw new Error('--match out/<match> (a pnpm demo run on the labelled camera) is required');
type Label = { sourceFrame: number; x: number; y: number } | { sourceFrame: number; visible: false };
const labels = JSON.parse(await readFile(values.labels, 'utf8')) as { source: string; frames: Label[] };
for (const f of labels.frames ?? []) {
  const ok = Number.isInteger(f.sourceFrame) && ('x' in f ? Number.isFinite(f.x) && Number.isFinite(f.y) : !f.visible);
  if (!ok)
    throw new Error(`${values.labels}: a frame needs sourceFrame and x, y or "visible": false: ${JSON.stringify(f)}`);
}
const radius = Number(values.radius);
const truth = new Map(labels.frames.map((f) => [f.sourceFrame, 'x' in f ? { x: f.x, y: f.y } : null] as const));

/** Per source frame: the track's position (detected/interpolated) and the best ball box's centre. */
const track = new Map<number, { x: number; y: number }>();
const best = new Map<number, { x: number; y: number; score: number }>();
const segments = (await readdir(join(values.match, 'track'))).filter((d) => d.startsWith('segment-')).sort();
let offset = 0;
for (const segment of segments) {
  const detections = await readDetectionsFile(join(values.match, 'detect', segment, 'detections.jsonl'));
  const ball = BallTrackFileSchema.parse(
    JSON.parse(await readFile(join(values.match, 'track', segment, 'ball-track.json'), 'utf8')),
  );
  for (const f of ball.frames) {
    const source = detections.frames[f.frame]?.sourceFrame;
    if (source === undefined || f.x === null || f.y === null || f.state === 'predicted' || f.state === 'lost') continue;
    track.set(offset + source, { x: f.x, y: f.y });
  }
  for (const f of detections.frames) {
    const top = f.detections.filter((d) => d.class === 'ball').sort((a, b) => b.score - a.score)[0];
    if (top && f.sourceFrame !== undefined) {
      best.set(offset + f.sourceFrame, {
        x: (top.box[0] + top.box[2]) / 2,
        y: (top.box[1] + top.box[3]) / 2,
        score: top.score,
      });
    }
  }
  offset += detections.header.source.frameCount;
}
const score = (given: Map<number, { x: number; y: number }>) => {
  let positions = 0;
  let right = 0;
  const frames: {
    sourceFrame: number;
    truth: { x: number; y: number } | null;
    given: { x: number; y: number } | null;
  }[] = [];
  for (const [sourceFrame, ball] of truth) {
    const g = given.get(sourceFrame) ?? null;
    frames.push({ sourceFrame, truth: ball, given: g });
    if (!g) continue;
    positions += 1;
    if (ball && Math.hypot(g.x - ball.x, g.y - ball.y) <= radius) right += 1;
  }
  const withBall = [...truth.values()].filter((b) => b !== null).length;
  return {
    positions,
    right,
    precision: positions > 0 ? +(right / positions).toFixed(3) : null,
    recall: +(right / withBall).toFixed(3),
    frames,
  };
};
const result = {
  command: `node bench/detect/real-ball-track.ts ${process.argv.slice(2).join(' ')}`.trim(),
  labels: values.labels,
  labelledFrames: truth.size,
  framesWithBall: [...truth.values()].filter((b) => b !== null).length,
  radiusPx: radius,
  ballTrack: score(track),
  bestBallBox: score(best),
  measuredAt: new Date().toISOString(),
};
process.stdout.write(
  `${result.labelledFrames} labelled frames (${result.framesWithBall} with the ball): ball track P ${result.ballTrack.precision} R ${result.ballTrack.recall} (${result.ballTrack.right}/${result.ballTrack.positions} positions right); best ball box P ${result.bestBallBox.precision} R ${result.bestBallBox.recall}\n`,
);
await writeFile(join(root, 'bench/results/detect-real-ball-track.json'), `${JSON.stringify(result, null, 2)}\n`);

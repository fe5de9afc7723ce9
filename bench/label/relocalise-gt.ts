/**
 * Re-draws the boxes of a hand-made ground truth from the image itself, for a static camera, so that
 * their edges owe nothing to any detector (issue #17: the tsukuba-left labels kept the default
 * detector's box wherever it looked good, which favours that detector's raw boxes over any other —
 * e.g. a tracker that smooths box sizes over time).
 *
 *   node bench/label/relocalise-gt.ts --video V --gt gt.mot.txt --out gt-silhouette.mot.txt
 *       [--background-frames 50] [--threshold 60] [--render DIR]
 *
 * How: the background is the per-pixel temporal median of `--background-frames` frames spread over
 * the clip (a static rig: players move, the pitch does not). For each labelled box (consider = 1)
 * the foreground is the pixels of a window around it (the box grown by half its size each
 * side) whose colour differs from the background by more than `--threshold` (sum of absolute RGB
 * differences, 0–765), opened then closed with a 3 × 3 structuring element; the new box is the tight bounding
 * box of the foreground components (8-connected) that reach the inner half of the labelled box
 * (a neighbour's separate silhouette in the window is left out).
 * A box keeps its hand-made edges, and says why in the summary, when:
 *   - `merged`: a kept component also reaches the inner half of another labelled person (two
 *     silhouettes touch: their boxes cannot be told apart this way);
 *   - `clipped`: the silhouette reaches the window's edge (it may go on beyond the window);
 *   - `faint`: under a quarter of the labelled box is foreground (a person still for most of the
 *     clip is part of the median background, or nearly the colour of the grass);
 *   - `disagrees`: the silhouette box overlaps the labelled box with IoU < 0.5 (something else —
 *     a ball, a line, a shadow — joined the silhouette).
 * Identities, frames and ignore regions are kept. Writes `<out>` and `<out without .mot.txt>.summary.json` (the counts, the mean edge shifts); with
 * `--render`, DIR/silhouette-<frame>.png draws the labelled box (red) and the silhouette's (green
 * where it replaced the labelled one, yellow where it did not) on 3×-scaled crops, to be looked at before the ground truth is used.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { probeVideo } from '../../core/src/workers/detect/frames/probe-video.ts';

type Box = [number, number, number, number];
interface GtRow {
  fields: string[];
  frame: number;
  consider: boolean;
  box: Box;
}

const { values } = parseArgs({
  options: {
    video: { type: 'string' },
    gt: { type: 'string' },
    out: { type: 'string' },
    'background-frames': { type: 'string', default: '50' },
    threshold: { type: 'string', default: '60' },
    render: { type: 'string' },
  },
});
if (!values.video || !values.gt || !values.out) {
  process.stderr.write('usage: relocalise-gt.ts --video V --gt gt.mot.txt --out out.mot.txt [--render DIR]\n');
  process.exit(2);
}
const threshold = Number(values.threshold);
/** The search window: the labelled box grown by this share of its size on each side. */
const WINDOW_MARGIN = 0.5;

const rows: GtRow[] = (await readFile(values.gt, 'utf8'))
  .trim()
  .split('\n')
  .map((line) => {
    const fields = line.split(',');
    const [frame, , x, y, w, h, consider] = fields.map(Number) as number[];
    return { fields, frame: frame!, consider: consider === 1, box: [x!, y!, x! + w!, y! + h!] as Box };
  });
const people = rows.filter((r) => r.consider);
const info = await probeVideo(values.video);
const { width, height } = info;
const grow = (b: Box, k: number): Box => {
  const dx = (b[2] - b[0]) * k;
  const dy = (b[3] - b[1]) * k;
  return [
    Math.max(0, Math.floor(b[0] - dx)),
    Math.max(0, Math.floor(b[1] - dy)),
    Math.min(width, Math.ceil(b[2] + dx)),
    Math.min(height, Math.ceil(b[3] + dy)),
  ];
};
// The region every window lies in: only it is decoded.
const windows = people.map((r) => grow(r.box, WINDOW_MARGIN));
const region: Box = [
  Math.min(...windows.map((w) => w[0])) & ~1,
  Math.min(...windows.map((w) => w[1])) & ~1,
  Math.max(...windows.map((w) => w[2])),
  Math.max(...windows.map((w) => w[3])),
];
const rw = (region[2] - region[0] + 1) & ~1;
const rh = (region[3] - region[1] + 1) & ~1;

/** Decodes the given source frames (0-based) of the region as RGB24, in order. */
async function decode(frames: readonly number[]): Promise<Map<number, Uint8Array>> {
  const select = frames.map((f) => `eq(n\\,${f})`).join('+');
  const child = spawn(
    'ffmpeg',
    [
      '-v',
      'error',
      '-i',
      values.video!,
      '-vf',
      `select='${select}',crop=${rw}:${rh}:${region[0]}:${region[1]}`,
      '-fps_mode',
      'passthrough',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      'pipe:1',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const chunks: Buffer[] = [];
  for await (const chunk of child.stdout) chunks.push(chunk as Buffer);
  const all = Buffer.concat(chunks);
  const size = rw * rh * 3;
  if (all.length !== size * frames.length)
    throw new Error(`decoded ${all.length} bytes, expected ${size * frames.length}`);
  return new Map(frames.map((f, i) => [f, new Uint8Array(all.buffer, all.byteOffset + i * size, size)]));
}

const nBackground = Number(values['background-frames']);
const frameCount = info.frameCount;
const backgroundFrames = Array.from({ length: nBackground }, (_, i) =>
  Math.min(frameCount - 1, Math.round((i * (frameCount - 1)) / (nBackground - 1))),
);
const decodedBackground = [...(await decode([...new Set(backgroundFrames)])).values()];
const background = new Uint8Array(rw * rh * 3);
const samples = new Uint8Array(decodedBackground.length);
for (let p = 0; p < background.length; p++) {
  for (let k = 0; k < decodedBackground.length; k++) samples[k] = decodedBackground[k]![p]!;
  samples.sort();
  background[p] = samples[samples.length >> 1]!;
}

const labelledFrames = [...new Set(people.map((r) => r.frame - 1))].sort((a, b) => a - b);
const decoded = await decode(labelledFrames);
const iou = (a: Box, b: Box) => {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const i = w * h;
  return i / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i);
};
const intersects = (a: Box, b: Box) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];

type Outcome = 'relocalised' | 'merged' | 'clipped' | 'faint' | 'disagrees';
const outcomes = new Map<GtRow, { outcome: Outcome; box: Box; window: Box; silhouette: Box | null }>();
for (const row of people) {
  const window = grow(row.box, WINDOW_MARGIN);
  // The inner halves of the other people in the window, in window coordinates.
  const otherInners = people
    .filter((o) => o !== row && o.frame === row.frame && intersects(o.box, window))
    .map((o) => grow(o.box, -0.25).map((v, i) => v - window[i % 2]!) as Box);
  const image = decoded.get(row.frame - 1)!;
  const ww = window[2] - window[0];
  const wh = window[3] - window[1];
  const mask = new Uint8Array(ww * wh);
  for (let y = 0; y < wh; y++) {
    for (let x = 0; x < ww; x++) {
      const p = ((window[1] + y - region[1]) * rw + (window[0] + x - region[0])) * 3;
      const d =
        Math.abs(image[p]! - background[p]!) +
        Math.abs(image[p + 1]! - background[p + 1]!) +
        Math.abs(image[p + 2]! - background[p + 2]!);
      mask[y * ww + x] = d > threshold ? 1 : 0;
    }
  }
  // Opening drops specks of noise (grain, compression), closing then fills the silhouette's gaps.
  const opened = morph(morph(mask, ww, wh, 'erode'), ww, wh, 'dilate');
  const closed = morph(morph(opened, ww, wh, 'dilate'), ww, wh, 'erode');
  // Components reaching the inner half of the labelled box.
  const inner = grow(row.box, -0.25).map((v, i) => v - window[i % 2]!) as Box;
  const label = new Int32Array(ww * wh).fill(-1);
  let tight: Box | null = null;
  let inBox = 0;
  let merged = false;
  for (let start = 0; start < closed.length; start++) {
    if (!closed[start] || label[start]! >= 0) continue;
    const stack = [start];
    label[start] = start;
    const pixels: number[] = [];
    let reachesInner = false;
    let reachesOther = false;
    while (stack.length > 0) {
      const q = stack.pop()!;
      pixels.push(q);
      const qx = q % ww;
      const qy = (q - qx) / ww;
      const within = (b: Box) => qx >= b[0] && qx < b[2] && qy >= b[1] && qy < b[3];
      if (within(inner)) reachesInner = true;
      if (otherInners.some(within)) reachesOther = true;
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const nx = qx + dx;
          const ny = qy + dy;
          if (nx < 0 || ny < 0 || nx >= ww || ny >= wh) continue;
          const n = ny * ww + nx;
          if (closed[n] && label[n]! < 0) {
            label[n] = start;
            stack.push(n);
          }
        }
      }
    }
    if (!reachesInner) continue;
    merged ||= reachesOther;
    for (const q of pixels) {
      const x = (q % ww) + window[0];
      const y = Math.floor(q / ww) + window[1];
      if (x >= row.box[0] && x < row.box[2] && y >= row.box[1] && y < row.box[3]) inBox += 1;
      tight = tight
        ? [Math.min(tight[0], x), Math.min(tight[1], y), Math.max(tight[2], x + 1), Math.max(tight[3], y + 1)]
        : [x, y, x + 1, y + 1];
    }
  }
  const boxArea = (row.box[2] - row.box[0]) * (row.box[3] - row.box[1]);
  // A silhouette on the window's edge may go on beyond it (unless that edge is the frame's).
  const clipped =
    tight !== null &&
    ((tight[0] === window[0] && window[0] > 0) ||
      (tight[1] === window[1] && window[1] > 0) ||
      (tight[2] === window[2] && window[2] < width) ||
      (tight[3] === window[3] && window[3] < height));
  const outcome: Outcome = merged
    ? 'merged'
    : !tight || inBox < 0.25 * boxArea
      ? 'faint'
      : clipped
        ? 'clipped'
        : iou(tight, row.box) < 0.5
          ? 'disagrees'
          : 'relocalised';
  outcomes.set(row, { outcome, box: outcome === 'relocalised' ? tight! : row.box, window, silhouette: tight });
}

/** 3 × 3 dilation (any neighbour set) or erosion (all set; outside the window counts as set). */
function morph(mask: Uint8Array, w: number, h: number, op: 'dilate' | 'erode'): Uint8Array {
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let any = false;
      let all = true;
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          const ny = y + dy;
          const inside = nx >= 0 && ny >= 0 && nx < w && ny < h;
          const set = inside && mask[ny * w + nx] === 1;
          any ||= set;
          all &&= set || !inside;
        }
      }
      out[y * w + x] = (op === 'dilate' ? any : all) ? 1 : 0;
    }
  }
  return out;
}

const summaryPath = `${values.out.replace(/(\.mot)?\.txt$/, '')}.summary.json`;
const lines = rows.map((row) => {
  const o = outcomes.get(row);
  if (o?.outcome !== 'relocalised') return row.fields.join(',');
  const f = [...row.fields];
  f[2] = String(o.box[0]);
  f[3] = String(o.box[1]);
  f[4] = String(o.box[2] - o.box[0]);
  f[5] = String(o.box[3] - o.box[1]);
  return f.join(',');
});
await writeFile(values.out, `${lines.join('\n')}\n`);
const counts: Record<Outcome, number> = { relocalised: 0, merged: 0, clipped: 0, faint: 0, disagrees: 0 };
const changes: number[][] = [];
for (const [row, o] of outcomes) {
  counts[o.outcome] += 1;
  if (o.outcome === 'relocalised') changes.push(o.box.map((v, i) => v - row.box[i]!));
}
const round2 = (v: number) => Math.round(v * 100) / 100;
const mean = (k: number) => changes.reduce((s, c) => s + c[k]!, 0) / Math.max(1, changes.length);
const meanAbs = (k: number) => changes.reduce((s, c) => s + Math.abs(c[k]!), 0) / Math.max(1, changes.length);
const relocalisedIou =
  [...outcomes].filter(([, o]) => o.outcome === 'relocalised').reduce((s, [r, o]) => s + iou(r.box, o.box), 0) /
  Math.max(1, counts.relocalised);
const summary = {
  video: values.video,
  gt: values.gt,
  threshold,
  backgroundFrames: backgroundFrames.length,
  boxes: people.length,
  counts,
  meanIouWithHandBox: Number(relocalisedIou.toFixed(3)),
  meanEdgeShiftPx: { left: round2(mean(0)), top: round2(mean(1)), right: round2(mean(2)), bottom: round2(mean(3)) },
  meanAbsEdgeShiftPx: {
    left: round2(meanAbs(0)),
    top: round2(meanAbs(1)),
    right: round2(meanAbs(2)),
    bottom: round2(meanAbs(3)),
  },
};
await writeFile(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);

if (values.render) {
  await mkdir(values.render, { recursive: true });
  for (const frame of labelledFrames) {
    const image = decoded.get(frame)!;
    const scale = 3;
    const inFrame = [...outcomes].filter(([r]) => r.frame - 1 === frame);
    // One crop per person, side by side: the window at 3×, hand box red, silhouette box green.
    const crops = inFrame.map(([, o]) => o.window);
    const cw = Math.max(...crops.map((c) => c[2] - c[0])) * scale;
    const ch = Math.max(...crops.map((c) => c[3] - c[1])) * scale;
    const cols = 8;
    const sheetWidth = cw * cols;
    const sheetHeight = ch * Math.ceil(crops.length / cols);
    const sheet = new Uint8Array(sheetWidth * sheetHeight * 3);
    inFrame.forEach(([row, o], i) => {
      const ox = (i % cols) * cw;
      const oy = Math.floor(i / cols) * ch;
      const [wx0, wy0, wx1, wy1] = o.window;
      for (let y = 0; y < (wy1 - wy0) * scale; y++) {
        for (let x = 0; x < (wx1 - wx0) * scale; x++) {
          const sx = wx0 + Math.floor(x / scale);
          const sy = wy0 + Math.floor(y / scale);
          const p = ((sy - region[1]) * rw + (sx - region[0])) * 3;
          const q = ((oy + y) * sheetWidth + ox + x) * 3;
          let rgb = [image[p]!, image[p + 1]!, image[p + 2]!];
          const onEdge = (b: Box) => {
            const bx = [(b[0] - wx0) * scale, (b[2] - wx0) * scale];
            const by = [(b[1] - wy0) * scale, (b[3] - wy0) * scale];
            const inside = x >= bx[0]! - 1 && x <= bx[1]! && y >= by[0]! - 1 && y <= by[1]!;
            return (
              inside &&
              (Math.abs(x - bx[0]!) < 1 ||
                Math.abs(x - bx[1]!) < 1 ||
                Math.abs(y - by[0]!) < 1 ||
                Math.abs(y - by[1]!) < 1)
            );
          };
          if (onEdge(row.box)) rgb = [255, 0, 0];
          if (o.silhouette && onEdge(o.silhouette)) rgb = o.outcome === 'relocalised' ? [0, 255, 0] : [255, 255, 0];
          sheet[q] = rgb[0]!;
          sheet[q + 1] = rgb[1]!;
          sheet[q + 2] = rgb[2]!;
        }
      }
    });
    // ffmpeg encodes the picture (raw RGB on stdin → PNG).
    execFileSync(
      'ffmpeg',
      [
        '-v',
        'error',
        '-y',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'rgb24',
        '-s',
        `${sheetWidth}x${sheetHeight}`,
        '-i',
        'pipe:0',
        join(values.render, `silhouette-${frame + 1}.png`),
      ],
      { input: sheet, stdio: ['pipe', 'inherit', 'inherit'] },
    );
  }
}

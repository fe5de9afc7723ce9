/**
 * A small tool to make tracking ground truth for a real clip by hand (issue #17: "label 20–40
 * frames yourself"), in two steps:
 *
 *   node bench/label/track-gt.ts propose --video V --detections D [--tracks T] --frames 50:195:5[,from:to:step…] --out DIR
 *       [--crop x,y,w,h] [--min-score 0.25] [--width 1600]
 *     Writes DIR/proposals.json (per source frame: numbered candidate boxes — the tracker's boxes and
 *     the detections ≥ --min-score that no tracked box covers) and DIR/propose-<frame>.png, the frame
 *     (cropped, scaled to --width) with the candidates drawn and numbered, to be looked at.
 *   node bench/label/track-gt.ts build --proposals DIR/proposals.json --edits E.json --out gt.txt
 *       [--base gt.mot.txt] [--render DIR]
 *     Applies the edits — per frame `drop` (candidate numbers that are not a person to count) and
 *     `add` (boxes [x1,y1,x2,y2] in source pixels of people no candidate has; numbered after the
 *     candidates, in order), and `ignore` (boxes, every frame: spectators, the bench; predictions there
 *     are not counted) — then links the boxes of consecutive labelled frames into identities by
 *     optimal assignment on centre distance over box height from each identity's constant-velocity
 *     prediction of its head point (gate 0.8; 1.28 on an identity's first step, before it has a
 *     velocity), `links` in the edits overriding it, and writes MOTChallenge ground truth
 *     (`frame = source frame + 1, id, left, top, width, height, 1, 1, 1`; ignore regions with
 *     consider = 0 and id −1). With --render, DIR/gt-<frame>.png shows the identities (base frames in white).
 *     --base extends an existing ground truth (its proposals need not exist any more): its rows are
 *     written back verbatim (frames, ids, boxes, ignore rows) and the proposals' frames, which must lie
 *     before its first or after its last frame, are linked to its identities — frames after it
 *     forward in time from its last frames (velocity from an identity's last two base frames),
 *     frames before it backward in time from its first frames (the same rule, time reversed); new
 *     people get ids after the base's largest. In `links` (`[frame, n, frame, n]`, source frames) a
 *     base frame's box is named by its identity: `[50, 3, 40, 7]` makes box 7 of frame 40 the base's
 *     id 3. A link takes effect when the second of its two frames is linked, in either direction.
 *
 * The ground truth is only as good as the look it got: say how it was made where it is used.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readDetectionsFile } from '../../core/src/workers/detect/index.ts';
import { assignWithLimit } from '../../core/src/workers/track/assignment.ts';
import { readTracksFile } from '../../core/src/workers/track/index.ts';

type Box = [number, number, number, number];
interface Candidate {
  n: number;
  box: Box;
  source: 'track' | 'detection';
  score: number;
  trackId?: number;
}
interface Proposals {
  video: string;
  width: number;
  height: number;
  crop: [number, number, number, number];
  frames: { sourceFrame: number; candidates: Candidate[] }[];
}
interface Edits {
  /**
   * `[x, y, width, height]`, source px: the region labelled. Boxes whose centre lies outside are left
   * out, and the rest of the frame becomes ignore regions (predictions there are not counted).
   */
  roi?: [number, number, number, number];
  frames?: Record<string, { drop?: number[]; add?: Box[] }>;
  ignore?: Box[];
  /**
   * `[frame, n, frame, n]`: the box n of one frame is the same person as box n of another (build's
   * numbering; in a --base frame, n is the base identity).
   */
  links?: [number, number, number, number][];
}

const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf';
const iou = (a: Box, b: Box) => {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
};

/** The source frames `from:to:step[,from:to:step…]`, in the order given. */
function frameList(spec: string): number[] {
  const out: number[] = [];
  for (const range of spec.split(',')) {
    const [from, to, step] = range.split(':').map(Number) as [number, number, number];
    for (let f = from; f <= to; f += step) out.push(f);
  }
  return out;
}

/** One source frame as PNG, cropped and scaled, with the boxes drawn and labelled. */
function drawFrame(
  video: string,
  frame: number,
  crop: [number, number, number, number],
  width: number,
  boxes: { box: Box; label: string; colour: string }[],
  out: string,
): void {
  const [cx, cy, cw, ch] = crop;
  const draw = boxes.flatMap(({ box, label, colour }) => {
    const x = Math.round(box[0] - cx);
    const y = Math.round(box[1] - cy);
    const w = Math.round(box[2] - box[0]);
    const h = Math.round(box[3] - box[1]);
    return [
      `drawbox=x=${x}:y=${y}:w=${w}:h=${h}:color=${colour}:t=2`,
      `drawtext=fontfile=${FONT}:text='${label}':x=${x}:y=${Math.max(0, y - 30)}:fontsize=26:fontcolor=${colour}:box=1:boxcolor=black@0.6`,
    ];
  });
  const filter = [`select=eq(n\\,${frame})`, `crop=${cw}:${ch}:${cx}:${cy}`, ...draw, `scale=${width}:-2`].join(',');
  execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', video, '-vf', filter, '-frames:v', '1', out]);
}

async function propose(values: Record<string, string | undefined>): Promise<void> {
  const detections = await readDetectionsFile(values.detections!);
  const tracks = values.tracks ? await readTracksFile(values.tracks) : null;
  const { width, height, fps } = detections.header.source;
  const crop = (values.crop?.split(',').map(Number) ?? [0, 0, width, height]) as [number, number, number, number];
  const minScore = Number(values['min-score'] ?? 0.25);
  const out = values.out!;
  await mkdir(out, { recursive: true });
  const proposals: Proposals = { video: values.video!, width, height, crop, frames: [] };
  for (const sourceFrame of frameList(values.frames!)) {
    const tMs = (sourceFrame * 1000) / fps;
    const candidates: Candidate[] = [];
    for (const t of tracks?.tracks ?? []) {
      if (t.class === 'ball') continue;
      const f = t.frames.find((x) => Math.abs(x.tMs - tMs) < 1);
      if (f) candidates.push({ n: 0, box: f.box as Box, source: 'track', score: f.score, trackId: t.id });
    }
    const analysed = detections.frames.find((f) => f.sourceFrame === sourceFrame);
    if (!analysed) throw new Error(`source frame ${sourceFrame} was not analysed`);
    for (const d of analysed.detections) {
      if (d.class === 'ball' || d.score < minScore) continue;
      if (candidates.some((c) => iou(c.box, d.box as Box) > 0.5)) continue;
      candidates.push({ n: 0, box: d.box as Box, source: 'detection', score: d.score });
    }
    candidates
      .sort((a, b) => a.box[0] - b.box[0])
      .forEach((c, i) => {
        c.n = i + 1;
      });
    proposals.frames.push({ sourceFrame, candidates });
    drawFrame(
      values.video!,
      sourceFrame,
      crop,
      Number(values.width ?? 1600),
      candidates.map((c) => ({
        box: c.box,
        label: String(c.n),
        colour: c.source === 'track' ? 'lime' : 'yellow',
      })),
      join(out, `propose-${sourceFrame}.png`),
    );
    process.stderr.write(`frame ${sourceFrame}: ${candidates.length} candidates\n`);
  }
  await writeFile(join(out, 'proposals.json'), `${JSON.stringify(proposals, null, 1)}\n`);
}

/**
 * One labelled frame: its people's boxes (source px); `n` numbers them (the proposals' numbering, additions
 * after it; in a --base frame, the identity) and `id` is their identity (0 until linked).
 */
interface Frame {
  sourceFrame: number;
  boxes: { n: number; box: Box; id: number }[];
  /** A --base frame: its identities are given and its MOTChallenge rows are written back verbatim. */
  rows?: string[];
}

/** A MOTChallenge ground truth as frames, in time order, each with its rows verbatim. */
async function readBase(path: string): Promise<Frame[]> {
  const frames = new Map<number, Frame>();
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (!line.trim()) continue;
    const [frame, id, x, y, w, h, consider] = line.split(',').map(Number) as number[];
    const sourceFrame = frame! - 1;
    const f = frames.get(sourceFrame) ?? { sourceFrame, boxes: [], rows: [] };
    frames.set(sourceFrame, f);
    f.rows!.push(line);
    if (consider === 1) f.boxes.push({ n: id!, box: [x!, y!, x! + w!, y! + h!], id: id! });
  }
  return [...frames.values()].sort((a, b) => a.sourceFrame - b.sourceFrame);
}

/**
 * Gives identities to the boxes of `frames`, taken in the order given (forward or backward in time):
 * each frame's boxes are matched by optimal assignment to where each identity of the frame before is
 * predicted to be — its head point (top centre: an occluded player's head is seen, his feet are
 * guessed) moved by its last step, distance over box height, gate 0.8 (1.28 on an identity's first
 * step, before it has a step) — then `link(sourceFrame, n)` (a `links` override) wins, and boxes left
 * without an identity (or sharing one with a box before them in the list) get `newId()`. A base frame
 * (`rows`) keeps its identities and only feeds the prediction.
 */
function linkFrames(
  frames: Frame[],
  link: (sourceFrame: number, n: number) => number | undefined,
  newId: () => number,
): void {
  const head = (b: Box): [number, number] => [(b[0] + b[2]) / 2, b[1]];
  const history = new Map<
    number,
    { at: [number, number]; velocity: [number, number]; height: number; moving: boolean }
  >();
  for (const frame of frames) {
    const known = [...history.entries()];
    if (!frame.rows && known.length > 0) {
      const cost = frame.boxes.map((b) =>
        known.map(([, h]) => {
          const [x, y] = head(b.box);
          const d = Math.hypot(x - (h.at[0] + h.velocity[0]), y - (h.at[1] + h.velocity[1]));
          // Without a velocity yet (an identity's first step) the gate is 1.6 × wider.
          return d / Math.max(1, h.height, b.box[3] - b.box[1]) / (h.moving ? 1 : 1.6);
        }),
      );
      const { matches } = assignWithLimit(cost, frame.boxes.length, known.length, 0.8);
      for (const [row, column] of matches) frame.boxes[row]!.id = known[column]![0];
    }
    const seen = new Set<number>();
    for (const b of frame.boxes) {
      if (!frame.rows) {
        b.id = link(frame.sourceFrame, b.n) ?? b.id;
        // Two boxes of one frame cannot be one person: the later one in the list starts a new identity.
        if (b.id === 0 || seen.has(b.id)) b.id = newId();
      }
      seen.add(b.id);
      const at = head(b.box);
      const before = history.get(b.id);
      history.set(b.id, {
        at,
        velocity: before ? [at[0] - before.at[0], at[1] - before.at[1]] : [0, 0],
        height: b.box[3] - b.box[1],
        moving: before !== undefined,
      });
    }
    // An identity not seen in this frame is not carried further (every person is labelled in every frame).
    for (const id of [...history.keys()]) if (!seen.has(id)) history.delete(id);
  }
}

async function build(values: Record<string, string | undefined>): Promise<void> {
  const proposals = JSON.parse(await readFile(values.proposals!, 'utf8')) as Proposals;
  const edits = JSON.parse(await readFile(values.edits!, 'utf8')) as Edits;
  const base = values.base ? await readBase(values.base) : [];
  const roi = edits.roi;
  const inRoi = (box: Box) => {
    if (!roi) return true;
    const cx = (box[0] + box[2]) / 2;
    const cy = (box[1] + box[3]) / 2;
    return cx >= roi[0] && cx <= roi[0] + roi[2] && cy >= roi[1] && cy <= roi[1] + roi[3];
  };
  const ignore: Box[] = [...(edits.ignore ?? [])];
  if (roi) {
    const [x, y, w, h] = roi;
    const W = proposals.width;
    const H = proposals.height;
    ignore.push([0, 0, W, y], [0, y + h, W, H], [0, y, x, y + h], [x + w, y, W, y + h]);
  }
  // Labelled boxes per frame, numbered as in the proposals (additions after them).
  const labelled: Frame[] = proposals.frames
    .map(({ sourceFrame, candidates }) => {
      const e = edits.frames?.[String(sourceFrame)] ?? {};
      const kept = candidates.filter((c) => !e.drop?.includes(c.n)).map((c) => ({ n: c.n, box: c.box }));
      (e.add ?? []).forEach((box, i) => {
        kept.push({ n: candidates.length + i + 1, box });
      });
      return { sourceFrame, boxes: kept.filter((b) => inRoi(b.box)).map((b) => ({ ...b, id: 0 })) };
    })
    .sort((a, b) => a.sourceFrame - b.sourceFrame);
  // Without a base every frame is "after" it: one pass forward in time.
  const first = base[0]?.sourceFrame ?? Number.NEGATIVE_INFINITY;
  const last = base.at(-1)?.sourceFrame ?? Number.NEGATIVE_INFINITY;
  const before = labelled.filter((f) => f.sourceFrame < first);
  const after = labelled.filter((f) => f.sourceFrame > last);
  if (before.length + after.length < labelled.length) throw new Error('new frames must lie outside the base frames');
  const frames = [...before, ...base, ...after];
  const box = (sourceFrame: number, n: number) =>
    frames.find((f) => f.sourceFrame === sourceFrame)?.boxes.find((b) => b.n === n);
  // A link is applied when the second of its two boxes is linked (the first has its identity by then).
  const link = (sourceFrame: number, n: number) => {
    for (const [fa, na, fb, nb] of edits.links ?? []) {
      const other = fa === sourceFrame && na === n ? box(fb, nb) : fb === sourceFrame && nb === n ? box(fa, na) : null;
      if (other?.id) return other.id;
    }
    return undefined;
  };
  let nextId = Math.max(0, ...base.flatMap((f) => f.boxes.map((b) => b.id))) + 1;
  const newId = () => nextId++;
  linkFrames([...base, ...after], link, newId);
  linkFrames([...before, ...base].reverse(), link, newId);
  const rows: string[] = [];
  const r1 = (v: number) => Math.round(v * 10) / 10;
  for (const { sourceFrame, boxes, rows: verbatim } of frames) {
    if (verbatim) {
      rows.push(...verbatim);
      continue;
    }
    for (const { id, box } of boxes) {
      rows.push(
        [sourceFrame + 1, id, r1(box[0]), r1(box[1]), r1(box[2] - box[0]), r1(box[3] - box[1]), 1, 1, 1].join(','),
      );
    }
    for (const box of ignore) {
      rows.push(
        [sourceFrame + 1, -1, r1(box[0]), r1(box[1]), r1(box[2] - box[0]), r1(box[3] - box[1]), 0, 1, 1].join(','),
      );
    }
  }
  await writeFile(values.out!, `${rows.join('\n')}\n`);
  const ids = new Set(frames.flatMap((f) => f.boxes.map((b) => b.id)));
  const baseIds = new Set(base.flatMap((f) => f.boxes.map((b) => b.id)));
  process.stderr.write(
    `${frames.length} frames (${base.length} from the base), ${frames.reduce((t, f) => t + f.boxes.length, 0)} boxes, ` +
      `${ids.size} identities (${ids.size - baseIds.size} new) → ${values.out}\n`,
  );
  if (values.render) {
    await mkdir(values.render, { recursive: true });
    for (const { sourceFrame, boxes, rows: verbatim } of frames) {
      drawFrame(
        proposals.video,
        sourceFrame,
        proposals.crop,
        Number(values.width ?? 1600),
        [
          ...boxes.map((b) => ({ box: b.box, label: `${b.id}`, colour: verbatim ? 'white' : 'cyan' })),
          ...(edits.ignore ?? []).map((box) => ({ box, label: 'ignore', colour: 'red' })),
        ],
        join(values.render, `gt-${sourceFrame}.png`),
      );
    }
  }
}

const [command, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: Object.fromEntries(
    [
      'video',
      'detections',
      'tracks',
      'frames',
      'out',
      'crop',
      'min-score',
      'width',
      'proposals',
      'edits',
      'render',
      'base',
    ].map((k) => [k, { type: 'string' as const }]),
  ),
});
if (command === 'propose') await propose(values);
else if (command === 'build') await build(values);
else {
  process.stderr.write('usage: track-gt.ts propose|build … (see the comment at the top)\n');
  process.exit(2);
}

import { parseArgs } from 'node:util';
import {
  buildSequence,
  centreInRegions,
  type DetectionEval,
  evaluateDetections,
  evaluateTracking,
  MOT_SYNTHETIC_CLASSES,
  parseClassMap,
  readDetectionsFile,
  readGroundTruth,
  readMotGroundTruth,
  readTracksFile,
} from '@polyvision/core';
import { PolyvisionError } from '@polyvision/shared';
import { parseCommandLine, USAGE_EXIT } from '../command-kit.ts';

const HELP = `Usage: pnpm polyvision eval <detections|tracks> --gt <ground truth> --pred <file> [options]

Scores the analysis stages' outputs against ground truth.

  eval detections --gt <yolo-labels-dir | mot-gt.txt> --pred <detections.jsonl>
      Precision and recall per class at --iou (Hungarian matching, detections
      scoring ≥ --min-score) and AP (all scores, VOC all-point), plus a
      "people" row (player + goalkeeper + referee as one class).
      A YOLO labels directory is matched by order: analysed frame i ↔ the
      i-th label file by name (boxes scaled to the detections' source size).
      MOTChallenge gt is matched by source frame (gt frame = sourceFrame + 1).
  eval tracks --gt <mot-gt.txt> --pred <tracks.json>
      HOTA, DetA, AssA, MOTA, IDF1 (TrackEval port, core/src/workers/quality)
      over the analysed frames, for the classes in --classes. A predicted box
      whose centre lies in an ignore region of its frame (gt rows with
      consider = 0: spectators, an area not labelled) is left out.

Options:
  --iou <x>             IoU threshold                          [0.5]
  --ball-centre-px <n>  detections: match the ball on box centres at most n
                        source px apart instead of IoU (a ball of ~11 px:
                        2 px off already fails IoU 0.5; the model card's 4)
  --min-score <x>       score threshold for precision/recall   [0.3]
  --class-map <map>     ground-truth class ids, id:name,…
                        [YOLO dir: 0:ball,1:goalkeeper,2:player,3:referee;
                         MOT: 1:player,2:goalkeeper,3:referee,4:ball]
  --min-visibility <x>  MOT gt rows less visible are left out  [0]
  --ignore <x1,y1,x2,y2>  detections: a region of every frame (source px) left
                        out — truth and detections whose box centre is inside
                        count neither way (a broadcaster's logo, a score
                        overlay); repeat for several
  --classes <a,b>       tracks: classes compared  [player,goalkeeper,referee]
  --gt-frames-only      tracks: only the analysed frames that have ground truth
                        (hand-labelled every n-th frame)
  --json                print the result as JSON
  -h, --help

Exit status: 0 done, 1 unreadable input, 2 usage error.
`;

/** `polyvision eval detections|tracks`. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommandLine('eval', HELP, () =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        gt: { type: 'string' },
        pred: { type: 'string' },
        iou: { type: 'string' },
        'ball-centre-px': { type: 'string' },
        'min-score': { type: 'string' },
        'class-map': { type: 'string' },
        'min-visibility': { type: 'string' },
        ignore: { type: 'string', multiple: true },
        classes: { type: 'string' },
        'gt-frames-only': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }),
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [what] = positionals;
  const usage = (message: string) => {
    process.stderr.write(`eval: ${message}\n\n${HELP}`);
    return USAGE_EXIT;
  };
  if (what !== 'detections' && what !== 'tracks') return usage('expected "detections" or "tracks"');
  if (!values.gt || !values.pred) return usage('--gt and --pred are required');
  const fraction = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!(n >= 0 && n <= 1)) throw new PolyvisionError('eval_usage', `--${name} ${raw}: expected a number in [0, 1]`);
    return n;
  };
  try {
    const iouThreshold = fraction('iou', values.iou, 0.5);
    const minScore = fraction('min-score', values['min-score'], 0.3);
    const minVisibility = fraction('min-visibility', values['min-visibility'], 0);
    if (what === 'detections') {
      const pred = await readDetectionsFile(values.pred);
      const gt = await readGroundTruth(values.gt, {
        imageSize: { width: pred.header.source.width, height: pred.header.source.height },
        ...(values['class-map'] ? { classMap: values['class-map'] } : {}),
        minVisibility,
      });
      const ignoreRegions = (values.ignore ?? []).map(parseRegion);
      const ballCentrePx = values['ball-centre-px'] === undefined ? undefined : Number(values['ball-centre-px']);
      if (ballCentrePx !== undefined && !(ballCentrePx > 0 && ballCentrePx <= 1000)) {
        throw new PolyvisionError(
          'eval_usage',
          `--ball-centre-px ${values['ball-centre-px']}: expected px in (0, 1000]`,
        );
      }
      const result = evaluateDetections(gt, pred.frames, pred.header.source.fps, {
        iouThreshold,
        minScore,
        ignoreRegions,
        ...(ballCentrePx !== undefined ? { ballCentrePx } : {}),
      });
      if (result.frames === 0) throw new PolyvisionError('eval_no_overlap', 'no analysed frame has ground truth');
      process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : formatDetectionEval(result));
      return 0;
    }
    const tracks = await readTracksFile(values.pred);
    const gt = await readMotGroundTruth(
      values.gt,
      parseClassMap(values['class-map'] ?? MOT_SYNTHETIC_CLASSES),
      minVisibility,
    );
    const classes = (values.classes ?? 'player,goalkeeper,referee').split(',').map((c) => c.trim());
    const fps = tracks.detections.source.fps;
    // Analysed frame → source frame by its pts; MOTChallenge frames are 1-based.
    const frameOf = (tMs: number) => Math.round((tMs * fps) / 1000) + 1;
    const labelled = new Set([...gt.frames.keys(), ...(gt.ignore?.keys() ?? [])].map((f) => f + 1));
    const analysed = new Set<number>();
    for (const t of tracks.tracks) {
      for (const f of t.frames) {
        const frame = frameOf(f.tMs);
        if (!values['gt-frames-only'] || labelled.has(frame)) analysed.add(frame);
      }
    }
    // A box whose centre is in an ignore region of its frame counts neither way.
    const ignored = (frame: number, box: readonly number[]) => centreInRegions(box, gt.ignore?.get(frame - 1) ?? []);
    const tracker = tracks.tracks
      .filter((t) => classes.includes(t.class))
      .flatMap((t) => t.frames.map((f) => ({ frame: frameOf(f.tMs), id: t.id, box: f.box })))
      .filter((b) => analysed.has(b.frame) && !ignored(b.frame, b.box));
    const gtBoxes = [...gt.frames.entries()].flatMap(([frame, boxes]) =>
      boxes
        .filter((b) => classes.includes(b.class) && analysed.has(frame + 1))
        .map((b) => ({ frame: frame + 1, id: b.id ?? 0, box: b.box })),
    );
    const frames = [...analysed].sort((a, b) => a - b);
    // Only analysed frames: compact them to consecutive timesteps.
    const step = new Map(frames.map((f, i) => [f, i + 1]));
    const metrics = evaluateTracking(
      buildSequence(
        gtBoxes.map((b) => ({ ...b, frame: step.get(b.frame)! })),
        tracker.map((b) => ({ ...b, frame: step.get(b.frame)! })),
        1,
        frames.length,
      ),
    );
    if (values.json)
      process.stdout.write(`${JSON.stringify({ frames: frames.length, classes, ...metrics }, null, 2)}\n`);
    else {
      const p = (x: number) => x.toFixed(3);
      process.stdout.write(
        `tracks vs ${values.gt}: ${frames.length} analysed frames, classes ${classes.join('+')}\n` +
          `HOTA ${p(metrics.HOTA)}  DetA ${p(metrics.DetA)}  AssA ${p(metrics.AssA)}  MOTA ${p(metrics.MOTA)}  IDF1 ${p(metrics.IDF1)}  IDSW ${metrics.IDSW}\n` +
          // Where a HOTA goes: finding people (DetRe, DetPr), or drawing their boxes (LocA).
          `LocA ${p(metrics.LocA)}  DetRe ${p(metrics.DetRe)}  DetPr ${p(metrics.DetPr)}\n`,
      );
    }
    return 0;
  } catch (error) {
    if (error instanceof PolyvisionError) {
      process.stderr.write(`eval: ${error.code}: ${error.message}\n`);
      return error.code === 'eval_usage' ? USAGE_EXIT : 1;
    }
    throw error;
  }
}

/** `--ignore x1,y1,x2,y2` → a region; `eval_usage` unless four numbers with x1 < x2 and y1 < y2. */
function parseRegion(raw: string): [number, number, number, number] {
  const v = raw.split(',').map((x) => Number(x.trim()));
  if (v.length !== 4 || v.some((x) => !Number.isFinite(x)) || !(v[0]! < v[2]! && v[1]! < v[3]!)) {
    throw new PolyvisionError('eval_usage', `--ignore ${raw}: expected x1,y1,x2,y2 with x1 < x2 and y1 < y2`);
  }
  return [v[0]!, v[1]!, v[2]!, v[3]!];
}

/** The table `eval detections` prints. */
export function formatDetectionEval(result: DetectionEval): string {
  const ignoring = result.ignoreRegions.length
    ? `, ignoring ${result.ignoreRegions.map((r) => `[${r.join(',')}]`).join(' ')}`
    : '';
  const lines = [
    `${result.frames} frames, IoU ≥ ${result.iouThreshold}${result.ballCentrePx !== undefined ? ` (the ball: centres ≤ ${result.ballCentrePx} px apart)` : ''}, precision/recall at score ≥ ${result.minScore}, AP over all scores${ignoring}`,
    `${'class'.padEnd(11)}${'precision'.padStart(10)}${'recall'.padStart(8)}${'AP'.padStart(7)}${'TP'.padStart(6)}${'FP'.padStart(6)}${'FN'.padStart(6)}${'gt'.padStart(6)}`,
  ];
  for (const r of result.rows) {
    lines.push(
      `${r.class.padEnd(11)}${r.precision.toFixed(3).padStart(10)}${r.recall.toFixed(3).padStart(8)}${r.ap.toFixed(3).padStart(7)}${String(r.truePositives).padStart(6)}${String(r.falsePositives).padStart(6)}${String(r.falseNegatives).padStart(6)}${String(r.groundTruthBoxes).padStart(6)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
